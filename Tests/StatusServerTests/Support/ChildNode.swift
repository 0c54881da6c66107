import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A second statusd node run as a real child process (the `statusd` executable this package builds), so that it can
/// be killed with SIGKILL like a crashed node.
final class ChildNode: Sendable {
    let port: Int
    private let process: Process

    /// Starts `.build/debug/statusd` on a free port against the test Redis, and waits until `/healthz` answers.
    init(adminKey: String, nodeId: String, leaseSeconds: Int = 3, arguments: [String] = [], binary: URL = ChildNode.builtBinary) async throws {
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw TestAppError(message: "\(binary.path) is missing: build the package first (scripts/test does)")
        }
        let redisURL = try TestRedis.url
        let port = try Self.freePort()
        let process = Process()
        process.executableURL = binary
        process.arguments =
            [
                "--port", String(port), "--redis-url", redisURL, "--admin-key", adminKey, "--node-id", nodeId,
                "--lease-seconds", String(leaseSeconds), "--log-level", "error",
            ] + arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        self.port = port
        self.process = process
        for _ in 0..<200 {
            if (try? await Self.get("http://127.0.0.1:\(port)/healthz")) == 200 { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        kill(process.processIdentifier, SIGKILL)
        throw TestAppError(message: "child statusd did not start")
    }

    /// The `statusd` executable this package built.
    static var builtBinary: URL {
        URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".build/debug/statusd")
    }

    /// Kills the node like a crash: no graceful shutdown, no cleanup.
    func crash() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Asks the node to stop (SIGTERM), as an orchestrator does before a restart.
    func terminate() {
        kill(process.processIdentifier, SIGTERM)
    }

    /// Whether the process is still running.
    var isRunning: Bool { process.isRunning }

    /// Stops the node (SIGSTOP) like a stalled process: its sockets stay open, it answers nothing.
    func pause() {
        kill(process.processIdentifier, SIGSTOP)
    }

    /// Lets a paused node run again (SIGCONT).
    func resume() {
        kill(process.processIdentifier, SIGCONT)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGCONT)
            kill(process.processIdentifier, SIGKILL)
        }
    }

    private static func get(_ url: String) async throws -> Int {
        let (_, response) = try await URLSession.shared.data(from: URL(string: url)!)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    /// A port free now (the kernel's pick), for a server started next.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw TestAppError(message: "no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
