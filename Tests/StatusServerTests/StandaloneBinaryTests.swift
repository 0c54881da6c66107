import Foundation
import StatusCore
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The `statusd` binary runs when copied alone (`install -m 0755 statusd /usr/local/bin`, docs/operations.md): its Lua
/// scripts and web files are embedded in it, not read from a resource bundle beside it.
@Suite(.redis) struct StandaloneBinaryTests {
    @Test func aCopyOfTheBinaryAloneServesItsFilesAndRunsItsScripts() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("statusd-alone-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let copy = folder.appendingPathComponent("statusd")
        try FileManager.default.copyItem(at: ChildNode.builtBinary, to: copy)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["statusd"])

        let adminKey = "admin-" + UUID().uuidString
        let node = try await ChildNode(adminKey: adminKey, nodeId: "alone-" + UUID().uuidString.prefix(8).lowercased(), binary: copy)
        defer { node.crash() }
        let base = "http://127.0.0.1:\(node.port)"
        for path in ["/openapi.json", "/asyncapi.json", "/client/statusd.js", "/console"] {
            let (data, response) = try await URLSession.shared.data(from: URL(string: base + path)!)
            #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(path)")
            #expect(data.count > 1000, "\(path) is \(data.count) bytes")
        }
        // Creating an app runs a Lua script (app_create.lua, with the shared prelude).
        var request = URLRequest(url: URL(string: base + "/v1/apps")!)
        request.httpMethod = "POST"
        request.setValue("Bearer \(adminKey)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(#"{"appId": "alone-\#(UUID().uuidString.prefix(8).lowercased())"}"#.utf8)
        let (_, created) = try await URLSession.shared.data(for: request)
        #expect((created as? HTTPURLResponse)?.statusCode == 201)
    }
}
