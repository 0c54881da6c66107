import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §10.5 "so no observer can tell an invisible user from an offline one, by any answer, event, resume, snapshot or
/// listing they can reach": every path that shows a user to another takes its blocked set, the invisibility and the
/// grace from one function, ``PresenceView/of(_:seenBy:blocked:isFriend:)``. One test reads the sources, so that a path
/// added later that picks a view itself fails here; the other builds one state where blocks, invisibility and a grace
/// meet and asks every path the same viewer can reach.
@Suite struct OneViewTests {
    /// The files that show a user to another user, and must choose the view through the one function.
    static let viewerPaths = [
        "StatusServer/Operations/StatusOperations.swift",  // getUserStatus (HTTP and WebSocket), the subscribe reply
        "StatusServer/WebSocket/SessionSnapshot.swift",  // snapshots of every scope, the resume's fallback
        "StatusServer/WebSocket/SessionResume.swift",  // resumes
        "StatusServer/Fanout/DeliveryBatch.swift",  // events
    ]

    @Test func noPathPicksAViewOfAnotherUserItself() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)).compactMap { $0 as? URL }
            .filter { $0.pathExtension == "swift" }
        #expect(files.count > 50, "the sources were not found at \(sources.path)")
        let home = "StatusCore/PresenceView.swift"
        for file in files {
            let path = file.path.replacingOccurrences(of: sources.path + "/", with: "")
            let text = try String(contentsOf: file, encoding: .utf8)
            let calls = text.components(separatedBy: "PresenceView.of(").count - 1
            if Self.viewerPaths.contains(path) { #expect(calls > 0, "\(path) shows users to others without PresenceView.of") }
            guard path != home else { continue }
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                // The views of another user are made in one place only.
                for pattern in [".others(isFriend", ".blocked(publicVersionAtBlock", "PresenceView.others", "PresenceView.blocked"] {
                    #expect(!code.contains(pattern), "\(path):\(number + 1) picks a view itself: \(line)")
                }
                // A status shown as some view: the own view (the app's reads, the user's own), or one chosen by the
                // function in the same file.
                if code.contains("viewed(as:") || code.contains(".status(of:") {
                    let own = code.contains("viewed(as: .own") || code.contains("PresenceView.own.status(of:")
                    #expect(
                        own || calls > 0 || path == "StatusServer/Storage/StatusReply.swift",
                        "\(path):\(number + 1) shows a view not chosen by PresenceView.of: \(line)"
                    )
                }
            }
        }
    }

    /// A status without its `onlineDevices` and `lastActiveAt`.
    static func withoutDevices(_ status: JSONValue) -> JSONValue {
        guard case .object(var members) = status else { return status }
        members["onlineDevices"] = nil
        members["lastActiveAt"] = nil
        return .object(members)
    }

    /// alice is blocked by mallory, invisible, and in her grace (her phone dropped); olive is her friend and subscriber.
    /// Every path mallory (and olive) can reach shows alice the same way: getUserStatus over HTTP and over the
    /// WebSocket, the subscribe reply over both, snapshots of every scope, a resume (and a resume answered with a
    /// snapshot, past its log's bound), and olive's events; mallory hears nothing of alice after the block.
    @Test func everyPathShowsOneViewWhereBlocksInvisibilityAndGraceMeet() async throws {
        let config: JSONValue = [
            "plan": "premium", "statusQuery": true, "friendStatusNotify": true, "offlineGraceSeconds": 30,
            "rateLimit": ["calls": 1000, "windowSeconds": 1], "connectRateLimit": ["calls": 1000, "windowSeconds": 1],
        ]
        // A resume of an app-wide scope with more than one change in the log is answered with a snapshot.
        let boundedLog: (inout ServerConfiguration) -> Void = { $0.resumeLogReadLimit = 1 }
        try await withStatusd(.live, configure: boundedLog) { api in
            let app = try await api.createApp(config: config)
            let port = api.client.port!
            try await app.createUsers(["alice", "mallory", "olive", "bob"])
            expectOK(try await app.call(.put, "/users/alice", ["role": "crew"]))
            expectOK(try await app.call(.put, "/users/alice/friends", ["userIds": ["mallory", "olive"]]))
            for viewer in ["mallory", "olive"] { expectOK(try await app.subscribe(viewer, ["alice"])) }
            // Sessions that lose their socket before alice changes, to resume afterwards.
            var lost: [String: String] = [:]
            for viewer in ["mallory", "olive"] {
                for scope in ["subscriptions", "all"] {
                    let token = try await app.withDevice(port: port, userId: viewer, DeviceOptions(deviceId: "r-\(scope)", presence: scope)) {
                        _,
                        welcome in try #require(welcome["resume"].string)
                    }
                    lost["\(viewer) \(scope)"] = token
                    try await waitUntilGone(app, viewer, "r-\(scope)")
                }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                var live: [String: TestDevice] = [:]
                for viewer in ["mallory", "olive"] {
                    live[viewer] = try await app.openDevice(
                        port: port,
                        userId: viewer,
                        DeviceOptions(deviceId: "live"),
                        spawn: { group.addTask(operation: $0) }
                    ).0
                }
                let (phone, _) = try await app.openDevice(
                    port: port,
                    userId: "alice",
                    DeviceOptions(deviceId: "phone"),
                    spawn: { group.addTask(operation: $0) }
                )
                expectOK(try await app.call(.put, "/users/alice/status", ["customStatus": "at work", "availability": "busy"]))
                // What mallory heard before the block is in before the block begins.
                _ = try await live["mallory"]!.next { $0["statuses"][0]["customStatus"] == "at work" && $0["statuses"][0]["availability"] == "busy" }
                expectOK(try await app.call(.put, "/users/mallory/blocks", ["userIds": ["alice"]]))
                // The block's own news (SPEC §10.5: mallory is shown alice in the offline mask) is sent as the block is
                // answered, and may reach her device after the answer: it belongs to the block, not to what follows.
                try await live["mallory"]!.waitFor(timeout: .seconds(10)) {
                    $0["event"] == "onUserStatusChanged" && $0["statuses"][0]["userId"] == "alice"
                        && $0["statuses"][0]["statusType"] == "offline"
                }
                let blockedAt = live["mallory"]!.rawFrames.count
                expectOK(try await app.call(.put, "/users/alice/status", ["customStatus": "still here"]))
                expectOK(try await app.call(.put, "/users/alice/status", ["availability": "invisible"]))
                // SPEC §10.5: with a grace set, going invisible is timed like a drop: others are told nothing yet.
                let invisibleNews = try await live["olive"]!.statusEvents(of: "alice").filter { $0["statusType"] == "offline" }
                #expect(invisibleNews.isEmpty, "olive heard alice go offline within her grace: \(invisibleNews)")
                await phone.close()
                try await waitUntilGone(app, "alice", "phone")
                #expect(try await app.backendStatus("alice")["statusType"] == "online", "alice is in her grace")

                for viewer in ["mallory", "olive"] {
                    var paths: [(String, JSONValue?)] = []
                    let query = try await app.call(.post, "/users/\(viewer)/status/query", ["userIds": ["alice"]])
                    let reference = query.body["statuses"][0]
                    paths.append(("HTTP getUserStatus", reference))
                    let wsQuery = try await live[viewer]!.request("getUserStatus", ["userIds": ["alice"]])
                    paths.append(("WebSocket getUserStatus", wsQuery["result"]["statuses"][0]))
                    paths.append(("HTTP subscribe reply", try await app.subscribe(viewer, ["alice"]).body["statuses"][0]))
                    let wsSubscribe = try await live[viewer]!.request("subscribeUserStatus", ["userIds": ["alice"]])
                    paths.append(("WebSocket subscribe reply", wsSubscribe["result"]["statuses"][0]))
                    for scope in ["subscriptions", "friends", "all", "roles:crew"] {
                        let options = DeviceOptions(deviceId: "s-\(scope.prefix(5))", presence: scope, snapshot: true)
                        let frames = try await app.withDevice(port: port, userId: viewer, options) { device, _ in
                            try await Self.waitForSnapshot(device)
                        }
                        paths.append(("snapshot \(scope)", Self.status(of: "alice", in: frames.last!)))
                    }
                    for scope in ["subscriptions", "all"] {
                        var options = DeviceOptions(deviceId: "r-\(scope)", presence: scope, snapshot: true)
                        options.resume = lost["\(viewer) \(scope)"]
                        let frames = try await app.withDevice(port: port, userId: viewer, options) { device, _ in
                            try await Self.waitForSnapshot(device)
                        }
                        // The frame between the welcome and the snapshot is the resume's (a snapshot itself past the
                        // log's bound, for `all`).
                        let resumed = frames.dropLast().compactMap { Self.status(of: "alice", in: $0) }.last
                        if viewer == "olive" || scope == "all" {
                            paths.append(("resume \(scope)", resumed))
                        } else {
                            #expect(resumed == nil, "a resume sent \(viewer) alice, whom a block hides")
                        }
                    }
                    if viewer == "olive" {
                        // The last event olive heard is what she is shown, but for the devices and the last activity: a
                        // grace keeps alice online as she was while her devices are gone, and tells nobody (SPEC §10.3,
                        // §10.5); activity moves lastActiveAt without an event (SPEC §2).
                        let event = live[viewer]!.rawFrames.compactMap { Self.decode($0) }.filter { $0["event"] == "onUserStatusChanged" }
                            .compactMap { Self.status(of: "alice", in: $0) }.last
                        #expect(
                            event.map(Self.withoutDevices) == Self.withoutDevices(reference),
                            "olive's last event: \(event.map { "\($0)" } ?? "nothing")"
                        )
                    } else {
                        let heard = live[viewer]!.rawFrames.dropFirst(blockedAt).compactMap { Self.decode($0) }
                            .filter { $0["event"] == "onUserStatusChanged" }.compactMap { Self.status(of: "alice", in: $0) }
                        #expect(heard.isEmpty, "mallory heard of alice after the block: \(heard)")
                    }
                    for (path, status) in paths {
                        #expect(status == reference, "\(viewer), \(path): \(status.map { "\($0)" } ?? "nothing"), not \(reference)")
                    }
                    if viewer == "mallory" {
                        #expect(reference["statusType"] == "offline" && !reference.has("lastActiveAt") && !reference.has("customStatus"))
                    } else {
                        // Invisible within her grace: shown online as she was before, her devices gone.
                        #expect(reference["statusType"] == "online" && reference["customStatus"] == "still here")
                        #expect(reference["onlineDevices"].array.isEmpty)
                    }
                }
                // The app's own reads show alice as she is: the backend query and the listing agree.
                let own = try await app.backendStatus("alice")
                let listing = try await app.call(.get, "/users?status=online&limit=100").body["users"].array.first { $0["userId"] == "alice" }
                for field in ["statusType", "availability", "version", "customStatus"] {
                    #expect(listing?[field] == own[field], "listing's \(field)")
                }
                for device in live.values { await device.close() }
                group.cancelAll()
            }
        }
    }

    private func waitUntilGone(_ app: APIClient, _ userId: String, _ deviceId: String) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while try await app.backendStatus(userId)["onlineDevices"].array.contains(where: { $0["deviceId"].string == deviceId }) {
            guard ContinuousClock.now < deadline else { throw TestAppError(message: "\(deviceId) of \(userId) still connected") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The frames a device received up to its snapshot (the last of them).
    private static func waitForSnapshot(_ device: TestDevice) async throws -> [JSONValue] {
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            let frames = device.rawFrames.compactMap(decode)
            if let index = frames.firstIndex(where: { $0["snapshot"] == true }) { return Array(frames[...index]) }
            guard ContinuousClock.now < deadline else { throw TestAppError(message: "no snapshot") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    private static func status(of userId: String, in frame: JSONValue) -> JSONValue? {
        frame["statuses"].array.first { $0["userId"].string == userId }
    }

    private static func decode(_ text: String) -> JSONValue? { try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) }
}
