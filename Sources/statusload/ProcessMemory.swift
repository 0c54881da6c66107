import Foundation

/// Reads the resident set size of processes from `/proc/<pid>/status` (Linux).
enum ProcessMemory {
    /// VmRSS of `pid` in bytes, or nil when it cannot be read (process gone, not Linux).
    static func residentBytes(pid: Int32) -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, let kib = UInt64(fields[1]) else { return nil }
            return kib * 1024
        }
        return nil
    }

    /// The sum of the RSS of `pids` (those that can be read), or nil when none is given or readable.
    static func residentBytes(pids: [Int32]) -> UInt64? {
        let values = pids.compactMap { residentBytes(pid: $0) }
        return values.isEmpty ? nil : values.reduce(0, +)
    }
}
