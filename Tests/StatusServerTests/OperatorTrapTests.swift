import Foundation
import Testing

@testable import StatusServer

/// Admin keys that are short, empty or a placeholder shipped in `deploy/` are refused at start.
@Suite struct AdminKeyPolicyTests {
    @Test(arguments: ["", "   ", "short", "fifteen-bytes!!", "REPLACE-ME", "REPLACE-ME-with-a-long-random-admin-key", "dev-admin-key-change-me"])
    func refusesWeakKeys(_ key: String) {
        #expect(AdminKeyPolicy.problem(with: key) != nil)
    }

    @Test func acceptsALongRandomKey() {
        #expect(AdminKeyPolicy.problem(with: "sixteen-bytes-ok") == nil)
        #expect(AdminKeyPolicy.problem(with: "adm_" + UUID().uuidString) == nil)
    }

    @Test func everyPlaceholderInDeployIsKnown() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let files = ["deploy/docker-compose.yml", "deploy/k8s/secret.yaml", "deploy/systemd/statusd.env.example"]
        for file in files {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).hasPrefix("#") {
                guard let range = line.range(of: "STATUSD_ADMIN_KEY") else { continue }
                var value = line[range.upperBound...].drop { $0 == ":" || $0 == "=" || $0 == " " }
                if value.hasPrefix("${STATUSD_ADMIN_KEY:-") {
                    value = value.dropFirst("${STATUSD_ADMIN_KEY:-".count).prefix { $0 != "}" }
                }
                let placeholder = String(value).trimmingCharacters(in: CharacterSet(charactersIn: "\"' "))
                #expect(AdminKeyPolicy.problem(with: placeholder) != nil, "\(file): \(placeholder)")
            }
        }
    }

    /// The built executable exits non-zero with a clear message for a weak key, before touching Redis.
    @Test func theExecutableRefusesToStart() throws {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("statusd")
        let fallback = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".build/debug/statusd")
        let binary = try #require(
            [beside, fallback].first { FileManager.default.isExecutableFile(atPath: $0.path) },
            "build the statusd executable first"
        )
        for (arguments, environment) in [
            (["--admin-key", "short"], [:]),
            ([], ["STATUSD_ADMIN_KEY": ""]),
            ([], ["STATUSD_ADMIN_KEY": "dev-admin-key-change-me"]),
        ] as [([String], [String: String])] {
            let process = Process()
            process.executableURL = binary
            process.arguments = ["--port", "0", "--redis-url", "redis://127.0.0.1:1"] + arguments
            process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("STATUSD_") }.merging(environment) { $1 }
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(process.terminationStatus != 0, "\(arguments) \(environment)")
            #expect(message.contains("refusing to start"), "\(message)")
        }
    }
}
