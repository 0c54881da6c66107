import Foundation

/// Output to stdout (progress lines, tables, the summary), written unbuffered line by line so a pipe sees each line at
/// once.
enum Console {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }
}
