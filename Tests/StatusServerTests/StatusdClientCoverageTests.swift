import Crypto
import Foundation
import StatusdClient
import Testing

import struct StatusServer.ServerConfiguration

/// The generated client and its facade against a live statusd: every operation of the admin and server API in the
/// document is called through the facade, and answers as the SPEC says.
@Suite(.redis) struct StatusdClientCoverageTests {
    /// The generator reads the server's own document (a link, not a copy).
    @Test func theGeneratorReadsTheDocumentTheServerServes() throws {
        let served = try Data(contentsOf: OpenAPIDocumentFile.serverCopy)
        let generated = try Data(contentsOf: OpenAPIDocumentFile.generatorInput)
        #expect(served == generated)
    }

    /// The generated client is committed (scripts/generate-client): `GeneratedSources/generated.sha256` records the
    /// SHA-256 of the generator's inputs, the document and the config, and of every generated file. A change to either
    /// input, or a generated file edited by hand, fails here until the client is generated again.
    @Test func theCommittedClientWasGeneratedFromTheCurrentDocument() throws {
        let root = OpenAPIDocumentFile.serverCopy
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let generated = "Sources/StatusdClient/GeneratedSources"
        let record = try String(contentsOf: root.appendingPathComponent("\(generated)/generated.sha256"), encoding: .utf8)
        var recorded: [String: String] = [:]
        for line in record.split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(separator: " ", maxSplits: 1)
            try #require(fields.count == 2, "a line of generated.sha256 is not `hash  path`: \(line)")
            recorded[fields[1].trimmingCharacters(in: .whitespaces)] = String(fields[0])
        }
        let sources = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(generated).path)
            .filter { $0.hasSuffix(".swift") }.map { "\(generated)/\($0)" }
        #expect(sources.contains("\(generated)/Client.swift") && sources.contains("\(generated)/Types.swift"))
        let expected = Set(["Sources/StatusdClient/openapi.json", "Sources/StatusdClient/openapi-generator-config.yaml"] + sources)
        #expect(Set(recorded.keys) == expected, "generated.sha256 lists other files: scripts/generate-client")
        for path in expected.sorted() {
            let digest = SHA256.hash(data: try Data(contentsOf: root.appendingPathComponent(path)))
            let hex = digest.map { String(format: "%02x", $0) }.joined()
            #expect(recorded[path] == hex, "\(path) changed since the client was generated: run scripts/generate-client")
        }
    }

    /// `InitialAppConfig` (a create's config, which may be null) stands for `AppConfigPatch` in the generated client, so
    /// the two must describe the same members.
    @Test func theInitialConfigHasTheMembersOfAPatch() throws {
        let document = try JSONSerialization.jsonObject(with: Data(contentsOf: OpenAPIDocumentFile.serverCopy)) as? [String: Any]
        let schemas = (document?["components"] as? [String: Any])?["schemas"] as? [String: Any]
        let initial = try #require(schemas?["InitialAppConfig"] as? [String: Any])
        let patch = try #require(schemas?["AppConfigPatch"] as? [String: Any])
        let initialMembers = try JSONSerialization.data(withJSONObject: initial["properties"] ?? [:], options: .sortedKeys)
        let patchMembers = try JSONSerialization.data(withJSONObject: patch["properties"] ?? [:], options: .sortedKeys)
        #expect(initialMembers == patchMembers)
        #expect(initial["additionalProperties"] as? Bool == false && patch["additionalProperties"] as? Bool == false)
    }

    @Test func everyOperationOfTheDocumentIsCalledThroughTheFacade() async throws {
        let documented = try OpenAPIDocumentFile.operationIds(under: "/v1/apps")
        #expect(documented.count >= 27, "the document lists \(documented.sorted())")
        let recorder = OperationRecorder()
        // The facades' HTTP client keeps its connections: a short idle timeout lets the node stop without waiting on them.
        let shortIdle: (inout ServerConfiguration) -> Void = { $0.httpIdleTimeoutSeconds = 1 }
        try await withStatusd(.live, configure: shortIdle) { api in
            let admin = try api.adminFacade(middlewares: [recorder])
            let appId = "c" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()

            let created = try await admin.createApp(appId, config: AppConfigPatch(plan: .premium, statusQuery: true))
            #expect(created.appId == appId && !created.apiKey.isEmpty)
            #expect(created.config.plan == .premium)
            #expect(try await admin.listApps().contains(appId))
            #expect(try await admin.getApp(appId).config.statusQuery)
            #expect(try await admin.patchAppConfig(appId, AppConfigPatch(friendStatusNotify: true)).friendStatusNotify)

            var bound = api
            bound.appId = appId
            bound.apiKey = created.apiKey
            let app = try bound.appFacade(middlewares: [recorder])
            #expect(try await app.putUser("alice", profile: UserProfileInput(name: "Alice")).name == "Alice")
            try await app.putUser("bob")
            try await app.putUser("carol")
            #expect(try await app.getUser("alice").name == "Alice")
            let minted = try await app.mintToken(for: "alice", ttlSeconds: 60)
            #expect(minted.token.split(separator: ".").count == 3)
            #expect(minted.expiresAt > Int(Date().timeIntervalSince1970 * 1000))

            #expect(try await app.addFriends("alice", ["bob"]) == ["bob"])
            #expect(try await app.getFriends("bob") == ["alice"])
            #expect(try await app.removeFriends("alice", ["bob"]).isEmpty)
            #expect(try await app.addBlocks("alice", ["carol"]).byMe == ["carol"])
            #expect(try await app.getBlocks("carol", direction: .me).me == ["alice"])
            #expect(try await app.removeBlocks("alice", ["carol"]).byMe == [])

            let own = try await app.setSelfStatus("alice", customStatus: "writing", availability: .busy)
            #expect(own.customStatus == "writing" && own.availability == .busy)
            let subscribed = try await app.subscribeUserStatus(["alice", "bob"], for: "carol")
            #expect(subscribed.subscribed == ["alice", "bob"])
            #expect(subscribed.statuses.first { $0.userId == "alice" }?.customStatus == "writing")
            #expect(try await app.listSubscriptions("carol") == ["alice", "bob"])
            let seen = try await app.getUserStatus(["alice"], as: "carol")
            #expect(seen.statuses.map(\.userId) == ["alice"] && seen.failures.isEmpty)
            #expect(try await app.unsubscribeUserStatus(nil, for: "carol").unsubscribed.sorted() == ["alice", "bob"])

            #expect(try await app.backendLogin("bob", device: "bob-desk", platform: .macos).statusType == .online)
            #expect(try await app.backendHeartbeat("bob", device: "bob-desk").statusType == .online)
            let detailed = try await app.backendQuery(["bob"], detail: true)
            #expect(detailed.statuses.first?.onlineDevices?.map(\.deviceId) == ["bob-desk"])
            #expect(try await app.listUsers(status: .online, limit: 10).users.map(\.value1.userId) == ["bob"])
            #expect(try await app.backendLogout("bob", device: "bob-desk").statusType == .unlogined)
            try await app.backendLogin("bob", device: "bob-desk", platform: .macos)
            #expect(try await app.kick("bob", device: "bob-desk") == ["bob-desk"])
            #expect((try await admin.getAppStats(appId)).appId == appId)

            try await app.deleteUser("carol")
            let gone = await #expect(throws: StatusdError.self) { try await app.getUser("carol") }
            #expect(gone?.code == .userNotFound)
            try await admin.deleteApp(appId)
            #expect(try await !admin.listApps().contains(appId))
        }
        let missing = documented.subtracting(recorder.operationIds)
        #expect(missing.isEmpty, "operations of the document no facade call reaches: \(missing.sorted())")
    }
}
