import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// A seeded, model-based test of SPEC §6 and §9 "nothing lost": random operations on both transports (devices
/// connecting and dropping, status changes over HTTP and WebSocket, availability, device states, subscriptions,
/// friendships, blocks, kicks), with a one-second offline grace (SPEC §10.3) ending on its own between steps, run in
/// bursts with no pause between an answer and the next step, against a live node and a real Redis. A model of SPEC §6
/// says which devices must hear about whom; after each burst the test checks, within 3 s:
///
/// - nothing lost: every device that hears about a user holds that user's current version once it moved past the
///   version it had when the device started hearing about them;
/// - nothing leaked: a device never receives an event about a user it was not entitled to hear about at any moment of
///   the burst (no relation, or a block standing throughout);
/// - never backwards: the versions of one user's events on one device never decrease.
///
/// The seed is printed (`STATUSD_MODEL_SEED` replays it); `STATUSD_MODEL_SECONDS` bounds the run (default 20 s).
@Suite(.redis) struct PresenceModelTests {
    @Test func randomInterleavingsMatchTheModel() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["STATUSD_MODEL_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...999_999)
        let seconds = environment["STATUSD_MODEL_SECONDS"].flatMap(Int.init) ?? 20
        print("PresenceModelTests: seed \(seed), \(seconds) s (STATUSD_MODEL_SEED=\(seed) replays it)")
        let config: JSONValue = [
            "plan": "premium", "statusQuery": true, "friendStatusNotify": true, "rateLimit": ["calls": 10_000, "windowSeconds": 1],
            "connectRateLimit": ["calls": 10_000, "windowSeconds": 1], "offlineGraceSeconds": 1,
        ]
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: config)
            var run = ModelRun(app: app, port: api.client.port!, seed: seed)
            try await app.createUsers(run.model.users + [ModelRun.observer])
            try await withThrowingTaskGroup(of: Void.self) { group in
                let deadline = ContinuousClock.now + .seconds(seconds)
                var bursts = 0
                while ContinuousClock.now < deadline {
                    for _ in 0..<6 { try await run.step { group.addTask(operation: $0) } }
                    let problems = try await run.check()
                    bursts += 1
                    #expect(problems.isEmpty, "seed \(seed), burst \(bursts): \(problems.prefix(5)); steps: \(run.log.suffix(12))")
                    if !problems.isEmpty { break }
                }
                print("PresenceModelTests: seed \(seed): \(bursts) bursts, \(run.log.count) steps")
                await run.closeAll()
                group.cancelAll()
            }
        }
    }
}

/// SPEC §6 as a model: relationships and blocks as the server answered them, and who hears whom.
struct PresenceModel {
    let users = ["u0", "u1", "u2", "u3"]
    var subscriptions: Set<[String]> = []
    var friendships: Set<Set<String>> = []
    var blocks: Set<[String]> = []

    /// Whether a device of `viewer` hears about `target` (premium, statusQuery, friendStatusNotify, multiDeviceSync).
    func hears(_ viewer: String, _ target: String) -> Bool {
        if viewer == target { return true }
        if blocks.contains([viewer, target]) || blocks.contains([target, viewer]) { return false }
        return subscriptions.contains([viewer, target]) || friendships.contains([viewer, target])
    }
}

/// One randomized run: the model, the live devices and what each must know.
struct ModelRun {
    let app: APIClient
    let port: Int
    var rng: SplitMix
    var model = PresenceModel()
    var devices: [String: (user: String, device: TestDevice)] = [:]
    /// device key → target → the version the target had when the device started hearing about it.
    var baselines: [String: [String: Int64]] = [:]
    /// device key → targets the device was entitled to at some moment since the last check.
    var entitledSinceCheck: [String: Set<String>] = [:]
    /// device key → how many frames the last check had looked at.
    var framesChecked: [String: Int] = [:]
    var log: [String] = []
    private var counter = 0

    init(app: APIClient, port: Int, seed: UInt64) {
        self.app = app
        self.port = port
        self.rng = SplitMix(seed: seed)
    }

    /// Runs one random operation, with no pause after the previous one's answer.
    mutating func step(spawn: (@escaping @Sendable () async throws -> Void) -> Void) async throws {
        let user = model.users[rng.below(model.users.count)]
        let other = model.users.filter { $0 != user }[rng.below(model.users.count - 1)]
        let own = devices.filter { $0.value.user == user }.map(\.key).sorted()
        var before = try await versions()
        counter += 1
        switch rng.below(12) {
        case 0, 1:
            let key = "\(user)/d\(rng.below(2))"
            if let existing = devices[key] {
                await existing.device.close()
                devices[key] = nil
                log.append("drop \(key)")
                // A drop has no answer: its departure is filed a moment later. The model goes on once it is, so that
                // the versions it reads before the next step are not overtaken by it.
                try await waitUntilGone(user: user, deviceId: String(key.dropFirst(3)))
            } else {
                let (device, _) = try await app.openDevice(port: port, userId: user, DeviceOptions(deviceId: String(key.dropFirst(3))), spawn: spawn)
                devices[key] = (user, device)
                framesChecked[key] = 0
                baselines[key] = [:]
                log.append("connect \(key)")
                // A device is told of changes from its welcome on (what it missed before, a snapshot would bring).
                before = try await versions()
            }
        case 2, 3:
            let value = "s\(counter)"
            if let key = own.first, rng.below(2) == 0 {
                let reply = try await devices[key]!.device.request("setSelfStatus", ["customStatus": .string(value)])
                log.append("ws set \(user) \(value) ok=\(reply["ok"])")
            } else {
                _ = try await app.setStatus(user, value)
                log.append("http set \(user) \(value)")
            }
        case 4, 5:
            if let key = own.first, rng.below(2) == 0 {
                let reply = try await devices[key]!.device.request("subscribeUserStatus", ["userIds": [.string(other)]])
                log.append("ws subscribe \(user)→\(other) ok=\(reply["ok"])")
            } else {
                _ = try await app.subscribe(user, [other])
                log.append("http subscribe \(user)→\(other)")
            }
            model.subscriptions.insert([user, other])
        case 6:
            _ = try await app.unsubscribe(user, [other])
            model.subscriptions.remove([user, other])
            log.append("unsubscribe \(user)→\(other)")
        case 7:
            if model.friendships.contains([user, other]) {
                _ = try await app.call(.delete, "/users/\(user)/friends", ["userIds": [.string(other)]])
                model.friendships.remove([user, other])
                log.append("unfriend \(user) \(other)")
            } else {
                _ = try await app.call(.put, "/users/\(user)/friends", ["userIds": [.string(other)]])
                model.friendships.insert([user, other])
                log.append("friend \(user) \(other)")
            }
        case 8:
            if model.blocks.contains([user, other]) {
                _ = try await app.call(.delete, "/users/\(user)/blocks", ["userIds": [.string(other)]])
                model.blocks.remove([user, other])
                log.append("unblock \(user) \(other)")
                // Nothing is sent when a block ends (what changed under it was masked): a device hears what changes
                // from the unblock's answer on.
                before = try await versions()
            } else {
                _ = try await app.call(.put, "/users/\(user)/blocks", ["userIds": [.string(other)]])
                model.blocks.insert([user, other])
                log.append("block \(user) \(other)")
            }
        case 9:
            // SPEC §10.4: a state that changes the shown availability (automatic away) is a change for everyone.
            guard let key = own.first else { return }
            let state = ["active", "idle", "background"][rng.below(3)]
            let reply = try await devices[key]!.device.request("setDeviceState", ["state": .string(state)])
            log.append("state \(key) \(state) ok=\(reply["ok"])")
        case 10:
            // SPEC §10.1 / §10.5: invisible is a public change to offline, and back.
            let availability = ["available", "busy", "invisible"][rng.below(3)]
            _ = try await app.call(.put, "/users/\(user)/status", ["availability": .string(availability)])
            log.append("availability \(user) \(availability)")
        default:
            guard let key = own.last else { return }
            _ = try await app.call(.post, "/users/\(user)/kick", ["deviceId": .string(String(key.dropFirst(3)))])
            devices[key] = nil
            log.append("kick \(key)")
        }
        updateEntitlements(before: before)
    }

    /// Starts or ends each device's hearing of each user as the model now says, from the versions read before the step.
    private mutating func updateEntitlements(before: Versions) {
        for (key, entry) in devices {
            for target in model.users {
                if model.hears(entry.user, target) {
                    entitledSinceCheck[key, default: []].insert(target)
                    if baselines[key]?[target] == nil { baselines[key, default: [:]][target] = before.of(target, seenBy: entry.user) }
                } else {
                    baselines[key]?[target] = nil
                }
            }
        }
    }

    /// Checks the three properties, waiting up to 3 s for deliveries; returns what failed.
    mutating func check() async throws -> [String] {
        var problems: [String] = []
        let deadline = ContinuousClock.now + .seconds(3)
        repeat {
            problems = []
            let current = try await versions()
            for (key, entry) in devices.sorted(by: { $0.key < $1.key }) {
                let known = Self.knownVersions(entry.device.rawFrames)
                for (target, baseline) in baselines[key] ?? [:] {
                    let now = current.of(target, seenBy: entry.user)
                    if now > baseline, (known[target] ?? -1) < now {
                        problems.append("\(key) lost \(target): knows \(known[target] ?? -1), current \(now) (from \(baseline))")
                    }
                }
            }
            if problems.isEmpty { break }
            try await Task.sleep(for: .milliseconds(50))
        } while ContinuousClock.now < deadline
        for (key, entry) in devices.sorted(by: { $0.key < $1.key }) {
            let frames = entry.device.rawFrames
            let fresh = frames.dropFirst(framesChecked[key] ?? 0)
            var last: [String: Int64] = [:]
            for (target, version) in Self.events(Array(frames)) {
                if let previous = last[target], version < previous { problems.append("\(key) went back on \(target): \(previous) → \(version)") }
                last[target] = version
            }
            for (target, version) in Self.events(Array(fresh)) where !(entitledSinceCheck[key] ?? []).contains(target) {
                problems.append("\(key) heard \(target) v\(version) without being entitled")
            }
            framesChecked[key] = frames.count
        }
        entitledSinceCheck = [:]
        updateEntitlements(before: try await versions())
        return problems
    }

    mutating func closeAll() async {
        for entry in devices.values { await entry.device.close() }
        devices = [:]
    }

    /// A user who watches nobody and whom nobody blocks: what others see of each user is what this one is answered.
    static let observer = "observer"

    /// Every user's current versions: their own (the app's view, `POST /status/query`) and the public one others see
    /// (SPEC §10.5, asked as ``observer``).
    struct Versions {
        var own: [String: Int64] = [:]
        var seen: [String: Int64] = [:]

        /// The version `viewer` is shown of `target`.
        func of(_ target: String, seenBy viewer: String) -> Int64 { (target == viewer ? own[target] : seen[target]) ?? 0 }
    }

    private func versions() async throws -> Versions {
        let ids = JSONValue.array(model.users.map(JSONValue.string))
        var result = Versions()
        for status in try await app.call(.post, "/status/query", ["userIds": ids]).body["statuses"].array {
            if let userId = status["userId"].string { result.own[userId] = status["version"].int ?? 0 }
        }
        for status in try await app.call(.post, "/users/\(Self.observer)/status/query", ["userIds": ids]).body["statuses"].array {
            if let userId = status["userId"].string { result.seen[userId] = status["version"].int ?? 0 }
        }
        return result
    }

    /// Waits (3 s at most) until the user's device is no longer listed online.
    private func waitUntilGone(user: String, deviceId: String) async throws {
        let deadline = ContinuousClock.now + .seconds(3)
        while ContinuousClock.now < deadline {
            let response = try await app.call(.post, "/status/query", ["userIds": [.string(user)], "detail": true])
            let devices = response.body["statuses"][0]["onlineDevices"].array.compactMap { $0["deviceId"].string }
            if !devices.contains(deviceId) { return }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The highest version of each user a device was given: welcome, events and replies.
    static func knownVersions(_ frames: [String]) -> [String: Int64] {
        var known: [String: Int64] = [:]
        for text in frames {
            guard let frame = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else { continue }
            let statuses = frame["statuses"].array + [frame["status"]] + frame["result"]["statuses"].array + [frame["result"]]
            for status in statuses {
                guard let userId = status["userId"].string, let version = status["version"].int else { continue }
                known[userId] = max(known[userId] ?? -1, version)
            }
        }
        return known
    }

    /// The (user, version) of every status carried by `onUserStatusChanged` events, in order.
    static func events(_ frames: [String]) -> [(String, Int64)] {
        var result: [(String, Int64)] = []
        for text in frames {
            guard let frame = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)), frame["event"] == "onUserStatusChanged" else {
                continue
            }
            for status in frame["statuses"].array {
                if let userId = status["userId"].string, let version = status["version"].int { result.append((userId, version)) }
            }
        }
        return result
    }
}

/// A small seeded generator (SplitMix64), so that a run replays from its seed.
struct SplitMix {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
