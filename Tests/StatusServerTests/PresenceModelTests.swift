import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// A seeded, model-based test of where SPEC §4, §6, §7 and §10 meet: random operations on both transports (devices
/// connecting, dropping and coming back within the offline grace, status changes over HTTP and WebSocket, custom
/// statuses that clear themselves, two devices of one user setting their status at the same moment, availability with
/// invisibility, device states, subscriptions, friendships, blocks and unblocks, kicks, logouts, deletions of users,
/// connects with each presence scope (`roles:member` among them) asking for a snapshot and resuming a lost session),
/// against a live node (or two on one Redis) on a clock the test drives (graces and expiries end when the test lets time
/// pass) and a real Redis. ``PresenceModel`` says what every observer must be shown; the run compares it with what the
/// server sent:
///
/// - every getUserStatus reply (HTTP for every viewer, WebSocket for one), the backend's own view, and each welcome;
/// - each snapshot frame, exactly (who is listed, and how); each resume frame: every user the device hears about whose
///   version moved while it was away, each as it is now (a user who did not move may be resent as they are: SPEC §7
///   lets a resume repeat what the device had);
/// - nothing lost: a device that hears about a user holds their current view once it moved past where it started;
/// - nothing leaked: no event about a user a device was not entitled to hear about at any moment of the burst;
/// - never backwards: the versions one device is shown of one user never decrease, across a deletion too (a user
///   created again goes on from the deleted one's versions).
///
/// The seed is printed (`STATUSD_MODEL_SEED` replays it); `STATUSD_MODEL_SECONDS` bounds the run (default 6 s);
/// `STATUSD_MODEL_DELETIONS=often` deletes users three times as often.
/// The app has an offline grace, so becoming invisible takes it too (SPEC §10.5). A resume must list users the device
/// started hearing about while away (`STATUSD_MODEL_RESUME_NEW_RELATIONS=0` does not ask for them).
@Suite(.redis) struct PresenceModelTests {
    @Test func randomInterleavingsMatchTheModel() async throws {
        try await run(busGaps: false)
    }

    /// The same, while the node's bus feed breaks now and then: before about one step in fifteen, the node's pub/sub
    /// connections are killed (`CLIENT KILL`, ``BusFault``) and the next steps run at once, while they reconnect. What
    /// a device must hold is then the resynchronisation's work (SPEC §9 "nothing is lost", within 2 s of the feed being
    /// back; the check allows 3), for every scope, mask, grace and resume the run combines with it, and what it hears
    /// must still never go back nor reach a device not entitled to it: a deletion's departure lost with the feed too,
    /// to subscribers and friends, who no longer relate to the user created again (docs/delivery.md).
    @Test func randomInterleavingsWithBusGapsMatchTheModel() async throws {
        try await run(busGaps: true)
    }

    /// The same on two nodes of one Redis, with bus gaps: each device connects to either node (a lost session is
    /// resumed on either), so a change made on one reaches devices on both, a user's own devices are spread over them,
    /// and the gaps break the feed of one node while the other goes on. The nodes share the test's clock, and either
    /// may be the one whose sweep ends a grace or clears an expiry. It runs alone: two nodes, a server of its own and
    /// killed feeds are heavy beside the parallel suite.
    @Test(.tags(.runsAlone)) func randomInterleavingsAcrossTwoNodesMatchTheModel() async throws {
        try await run(busGaps: true, nodes: 2)
    }

    private func run(busGaps: Bool, nodes: Int = 1) async throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["STATUSD_MODEL_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...999_999)
        let seconds = environment["STATUSD_MODEL_SECONDS"].flatMap(Int.init) ?? 6
        let options = PresenceModel.Options(graced: true, invisibleGrace: true)
        let name = "PresenceModelTests" + (nodes > 1 ? " (\(nodes) nodes)" : "") + (busGaps ? " (bus gaps)" : "")
        print("\(name): seed \(seed), \(seconds) s (STATUSD_MODEL_SEED=\(seed) replays it)")
        let config: JSONValue = [
            "plan": "premium", "statusQuery": true, "friendStatusNotify": true, "rateLimit": ["calls": 100_000, "windowSeconds": 1],
            "connectRateLimit": ["calls": 100_000, "windowSeconds": 1], "offlineGraceSeconds": 1, "queryBatchLimit": 500,
            // The devices send nothing between their requests: however long the run, none is timed out.
            "heartbeatTimeoutSeconds": 86_400,
        ]
        // A redis-server of its own: on the shared one, other tests' nodes sweep every app's due-time indexes on
        // their own clocks, which run with the real time. This node's clock stands still between the steps that let
        // time pass, so an expiry it set 1 s ahead can be past on theirs (and on Redis's, which decides) while the model
        // still holds it, and one of them clears it.
        let server = try await PrivateRedis.start()
        defer { server.stop() }
        let clock = ManualNodeClock()
        let nodeIds = (0..<nodes).map { BusFault.nodeId("model\($0)") }
        let adminKey = "admin-" + UUID().uuidString
        try await withModelNodes(nodeIds, adminKey: adminKey, clock: clock, server: server) { api, ports in
            try await withRunningClient(server.configuration, "model-faults") { redis in
                let app = try await api.createApp(config: config)
                try await ModelRun.createUsers(ModelRun.users + [ModelRun.observer], in: app)
                var run = ModelRun(app: app, ports: ports, clock: clock, seed: seed, options: options)
                if busGaps {
                    run.busFaults = nodeIds.map { nodeId in { try await BusFault.killBusConnections(of: nodeId, using: redis) } }
                }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    let deadline = ContinuousClock.now + .seconds(seconds)
                    var bursts = 0
                    while ContinuousClock.now < deadline {
                        for _ in 0..<6 where run.problems.isEmpty { try await run.step { group.addTask(operation: $0) } }
                        if run.problems.isEmpty { try await run.check() }
                        bursts += 1
                        let problems = run.problems
                        #expect(problems.isEmpty, "seed \(seed), burst \(bursts): \(problems.prefix(5)); steps: \(run.log.suffix(40))")
                        if !problems.isEmpty { break }
                    }
                    let tally = run.tally.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                    print("\(name): seed \(seed): \(bursts) bursts, \(run.log.count) steps (\(tally))")
                    await run.closeAll()
                    group.cancelAll()
                }
            }
        }
    }

    /// Runs live nodes named `nodeIds` on `server` and the test's clock, one inside the other, and `body` with the
    /// first one's API and every node's port.
    private func withModelNodes(
        _ nodeIds: [String],
        adminKey: String,
        clock: ManualNodeClock,
        server: PrivateRedis,
        ports: [Int] = [],
        _ body: @Sendable (APIClient, [Int]) async throws -> Void
    ) async throws {
        guard let nodeId = nodeIds.last else { return }
        let configure: (inout ServerConfiguration) -> Void = { configuration in
            clock.install(in: &configuration)
            server.install(in: &configuration)
            BusFault.naming(nodeId)(&configuration)
        }
        try await withStatusd(.live, adminKey: adminKey, configure: configure) { api in
            let ports = [api.client.port!] + ports
            if nodeIds.count == 1 { return try await body(api, ports) }
            try await withModelNodes(Array(nodeIds.dropLast()), adminKey: adminKey, clock: clock, server: server, ports: ports, body)
        }
    }
}

/// One randomized run: the model, the live devices and what each must know.
struct ModelRun {
    typealias View = PresenceModel.View
    typealias Scope = PresenceModel.Scope

    static let users = ["u0", "u1", "u2", "u3"]
    /// A user who watches nobody and whom nobody relates to: the public view of everyone, asked as them.
    static let observer = "observer"

    struct Device {
        let user: String
        let id: String
        let scope: Scope
        let device: TestDevice
        let resume: String?
    }

    /// A session that lost its socket, which a later connect of the same device may resume.
    struct LostSession {
        let token: String
        /// Each user's version as the session's user is shown it (own or public, unmasked) when it was lost.
        let versions: [String: Int64]
        /// The users the session heard about when it was lost.
        let heard: Set<String>
    }

    let app: APIClient
    /// The nodes' ports: a device connects to one of them, at random when there are several.
    let ports: [Int]
    let clock: ManualNodeClock
    var rng: SplitMix
    var model: PresenceModel
    var devices: [String: Device] = [:]
    var lost: [String: LostSession] = [:]
    /// device key → target → the version the target had (as the device's user is shown it) when the device started
    /// hearing about them.
    var baselines: [String: [String: Int64]] = [:]
    /// device key → targets the device was entitled to at some moment since the last check.
    var entitledSinceCheck: [String: Set<String>] = [:]
    /// device key → how many frames the last check had looked at.
    var framesChecked: [String: Int] = [:]
    var log: [String] = []
    var problems: [String] = []
    /// Whether a resume must list a user the device started hearing about while away, whose version moved meanwhile
    /// (SPEC §7; `STATUSD_MODEL_RESUME_NEW_RELATIONS=0` leaves it out).
    let resumesNewRelations = ProcessInfo.processInfo.environment["STATUSD_MODEL_RESUME_NEW_RELATIONS"] != "0"
    /// How often, of the steps that may delete a user, one does: 1 in 3, or every time with
    /// `STATUSD_MODEL_DELETIONS=often` (a run aimed at deletions meeting the rest; the seed draws the same numbers).
    let deletesOften = ProcessInfo.processInfo.environment["STATUSD_MODEL_DELETIONS"] == "often"
    /// How many of each kind of operation and check the run made (printed at its end).
    var tally: [String: Int] = [:]
    /// Break each node's bus feed (kill its pub/sub connections; return how many): one of them, before about one step
    /// in fifteen; none: never.
    var busFaults: [@Sendable () async throws -> Int] = []
    private var counter = 0

    init(app: APIClient, ports: [Int], clock: ManualNodeClock, seed: UInt64, options: PresenceModel.Options) {
        self.app = app
        self.ports = ports
        self.clock = clock
        self.rng = SplitMix(seed: seed)
        self.model = PresenceModel(users: Self.users + [Self.observer], options: options)
    }

    // MARK: Steps

    /// Runs one random operation, with no pause after the previous one's answer.
    mutating func step(spawn: (@escaping @Sendable () async throws -> Void) -> Void) async throws {
        if !busFaults.isEmpty, rng.below(15) == 0 {
            let node = busFaults.count > 1 ? rng.below(busFaults.count) : 0
            let killed = try await busFaults[node]()
            log.append("bus gap (\(killed) connections of node \(node) killed)")
            tally["bus gap", default: 0] += 1
        }
        let user = Self.users[rng.below(Self.users.count)]
        let other = Self.users.filter { $0 != user }[rng.below(Self.users.count - 1)]
        let own = devices.values.filter { $0.user == user }.map { "\($0.user)/\($0.id)" }.sorted()
        let before = model
        counter += 1
        switch rng.below(20) {
        case 0, 1, 2:
            let deviceId = "d\(rng.below(2))"
            let key = "\(user)/\(deviceId)"
            if let existing = devices[key] {
                await existing.device.close()
                devices[key] = nil
                try await waitUntilGone(user: user, deviceId: deviceId)
                if let token = existing.resume {
                    let versions = Dictionary(
                        uniqueKeysWithValues: model.world.users.map { target, state in
                            (target, target == user ? state.version : state.publicVersion)
                        }
                    )
                    let heard = Set(model.world.users.keys.filter { model.world.hears(user, $0, scope: existing.scope) })
                    lost[key] = LostSession(token: token, versions: versions, heard: heard)
                }
                apply(.drop(user, device: deviceId))
            } else {
                try await connect(user: user, deviceId: deviceId, spawn: spawn)
                updateEntitlements(before: model)
                return
            }
        case 3, 4, 5:
            let value: String? = rng.below(6) == 0 ? nil : "s\(counter)"
            let expiring = value != nil && rng.below(3) == 0
            var fields: [String: JSONValue] = ["customStatus": value.map(JSONValue.string) ?? .null]
            if expiring { fields["clearAfterSeconds"] = 1 }
            if let key = own.first, rng.below(2) == 0 {
                let reply = try await devices[key]!.device.request("setSelfStatus", fields)
                expectOK(reply, "ws set \(user)")
            } else {
                let response = try await app.call(.put, "/users/\(user)/status", .object(fields))
                expectStatus(response, "set \(user)")
            }
            apply(.setCustomStatus(user, value, expiring: expiring))
        case 6:
            // Two devices of the user set their status at the same moment: either may land last. The user's devices
            // that are not connected connect first.
            for deviceId in ["d0", "d1"] where devices["\(user)/\(deviceId)"] == nil {
                try await connect(user: user, deviceId: deviceId, spawn: spawn)
                updateEntitlements(before: model)
            }
            let first = devices["\(user)/d0"]!.device
            let second = devices["\(user)/d1"]!.device
            let short = "short\(counter)"
            let long = "long\(counter)"
            async let a = first.request("setSelfStatus", ["customStatus": .string(short), "clearAfterSeconds": 1])
            async let b = second.request("setSelfStatus", ["customStatus": .string(long)])
            let (ra, rb) = try await (a, b)
            expectOK(ra, "ws set \(user) at once")
            expectOK(rb, "ws set \(user) at once")
            model.applyConcurrently([.setCustomStatus(user, short, expiring: true), .setCustomStatus(user, long, expiring: false)])
            tally["at once", default: 0] += 1
            log.append("at once: set \(user) \(short) (1 s) | set \(user) \(long)")
            // Which landed last, as the backend shows it.
            let own = try await backendViews()
            observe("after the sets at once") { world in
                Self.users.flatMap { Self.differences(own[$0] ?? .null, world.view(of: $0, by: nil), "own view of \($0)") }
            }
        case 7, 8:
            let availability = ["available", "away", "busy", "dnd", "invisible", "invisible"][rng.below(6)]
            if let key = own.first, rng.below(2) == 0 {
                expectOK(try await devices[key]!.device.request("setSelfStatus", ["availability": .string(availability)]), "ws availability")
            } else {
                expectStatus(try await app.call(.put, "/users/\(user)/status", ["availability": .string(availability)]), "availability")
            }
            apply(.setAvailability(user, availability))
        case 9:
            if model.world.subscriptions.contains([user, other]) {
                expectStatus(try await app.unsubscribe(user, [other]), "unsubscribe")
                apply(.unsubscribe(user, other))
            } else if let key = own.first, rng.below(2) == 0 {
                expectOK(try await devices[key]!.device.request("subscribeUserStatus", ["userIds": [.string(other)]]), "ws subscribe")
                apply(.subscribe(user, other))
            } else {
                expectStatus(try await app.subscribe(user, [other]), "subscribe")
                apply(.subscribe(user, other))
            }
        case 10:
            if model.world.isFriend(user, other) {
                expectStatus(try await app.call(.delete, "/users/\(user)/friends", ["userIds": [.string(other)]]), "unfriend")
                apply(.unfriend(user, other))
            } else {
                expectStatus(try await app.call(.put, "/users/\(user)/friends", ["userIds": [.string(other)]]), "friend")
                apply(.friend(user, other))
            }
        case 11, 12:
            if model.world.blocks.contains([user, other]) {
                expectStatus(try await app.call(.delete, "/users/\(user)/blocks", ["userIds": [.string(other)]]), "unblock")
                apply(.unblock(user, other))
                // Nothing is sent when a block ends (what changed under it was masked): a device hears what changes
                // from the unblock's answer on.
                updateEntitlements(before: model)
                return
            } else {
                expectStatus(try await app.call(.put, "/users/\(user)/blocks", ["userIds": [.string(other)]]), "block")
                apply(.block(user, other))
            }
        case 13:
            guard let key = own.first else { return try await step(spawn: spawn) }
            let idle = rng.below(2) == 0
            expectOK(try await devices[key]!.device.request("setDeviceState", ["state": idle ? "idle" : "active"]), "state")
            apply(.setDeviceState(user, device: devices[key]!.id, idle: idle))
        case 14:
            let one = own.isEmpty || rng.below(2) == 0 ? nil : own[rng.below(own.count)]
            if let one, rng.below(2) == 0 {
                let device = devices[one]!
                expectOK(try await device.device.request("logout", [:]), "logout")
                devices[one] = nil
                lost[one] = nil
                apply(.logout(user, device: device.id))
                break
            }
            let body: JSONValue = one.map { ["deviceId": .string(String($0.dropFirst(3)))] } ?? .object([:])
            expectStatus(try await app.call(.post, "/users/\(user)/kick", body), "kick")
            for key in own where one == nil || key == one {
                devices[key] = nil
                lost[key] = nil
            }
            apply(.kick(user, device: one.map { String($0.dropFirst(3)) }))
        case 15, 16, 17:
            try await passTime()
        case 18:
            if rng.below(3) == 0 || deletesOften {
                try await delete(user)
                updateEntitlements(before: model)
                return
            }
            try await passTime()
        default:
            try await query(user: user, other: other)
        }
        updateEntitlements(before: before)
    }

    /// Applies one operation to the model and logs it.
    private mutating func apply(_ operation: PresenceModel.Operation) {
        model.apply(operation)
        log.append(operation.description)
        tally[String(operation.description.prefix { $0 != " " }), default: 0] += 1
    }

    /// Connects a device (a random presence scope; a snapshot asked for or not; the lost session of the same device
    /// resumed or not), then checks its opening frames: the welcome, the resume's frame, the snapshot.
    private mutating func connect(user: String, deviceId: String, spawn: (@escaping @Sendable () async throws -> Void) -> Void) async throws {
        let key = "\(user)/\(deviceId)"
        let scope = [Scope.subscriptions, .friends, .all, .members][rng.below(4)]
        let resumed = rng.below(3) > 0 ? lost[key] : nil
        // A resume always comes with a snapshot here: its frame, if any, is what comes between the welcome and it.
        let snapshot = resumed != nil || rng.below(2) == 0
        var options = DeviceOptions(deviceId: deviceId, presence: scope.rawValue, snapshot: snapshot)
        options.resume = resumed?.token
        // The rng is drawn for a node only when there are several, so that a seed of one node replays as before.
        let node = ports.count > 1 ? rng.below(ports.count) : 0
        let (device, welcome) = try await app.openDevice(port: ports[node], userId: user, options, spawn: spawn)
        lost[key] = nil
        devices[key] = Device(user: user, id: deviceId, scope: scope, device: device, resume: welcome["resume"].string)
        framesChecked[key] = 0
        baselines[key] = [:]
        model.apply(.connect(user, device: deviceId))
        let place = ports.count > 1 ? " on node \(node)" : ""
        log.append("connect \(key) \(scope.rawValue)\(snapshot ? " snapshot" : "")\(resumed != nil ? " resume" : "")\(place)")
        observe("\(key) welcome") { world in Self.differences(welcome["status"], world.view(of: user, by: user), "welcome") }
        tally["connect", default: 0] += 1
        guard snapshot else { return }
        let frames = try await openingFrames(device)
        tally["snapshot", default: 0] += 1
        if resumed != nil { tally["resume", default: 0] += 1 }
        observe("\(key) snapshot") { world in
            Self.snapshotDifferences(frames.snapshot, expected: world.snapshot(for: user, scope: scope))
        }
        if let resumed {
            let strict = resumesNewRelations
            observe("\(key) resume") { world in
                Self.resumeDifferences(frames.resumed, user: user, scope: scope, lost: resumed, world: world, newRelations: strict)
            }
        } else if !frames.resumed.isEmpty {
            problems.append("\(key): a frame between the welcome and the snapshot without a resume: \(frames.resumed)")
        }
    }

    /// The statuses of the resume frame (empty when none came) and of the snapshot frame.
    private func openingFrames(_ device: TestDevice) async throws -> (resumed: [JSONValue], snapshot: JSONValue) {
        let deadline = ContinuousClock.now + .seconds(3)
        while !device.rawFrames.contains(where: { Self.decode($0)?["snapshot"] == true }) {
            guard ContinuousClock.now < deadline else { throw TestAppError(message: "no snapshot frame") }
            try await Task.sleep(for: .milliseconds(5))
        }
        var resumed: [JSONValue] = []
        var snapshot: JSONValue = .null
        for text in device.rawFrames {
            guard let frame = Self.decode(text) else { continue }
            if frame["snapshot"] == true {
                snapshot = frame
                break
            }
            if frame["event"] == "onUserStatusChanged" { resumed += frame["statuses"].array }
        }
        return (resumed, snapshot)
    }

    /// Lets time pass until every pending grace, expiry and grace of going invisible has ended. The node's clock runs a
    /// little ahead of the real one meanwhile (a moment has come when the Redis clock says so, and a sweep takes what is
    /// due on the earlier of the two clocks), until the backend's view shows the model's.
    private mutating func passTime() async throws {
        model.passTime()
        log.append("time passes")
        tally["time passes", default: 0] += 1
        let deadline = ContinuousClock.now + .seconds(6)
        while ContinuousClock.now < deadline {
            let lead = clock.wallNow.timeIntervalSince(Date())
            if lead < 1.25 {
                try await clock.step(by: .milliseconds(max(250, Int64((1.25 - lead) * 1000))))
            } else {
                try await Task.sleep(for: .milliseconds(20))
            }
            // Both views: an end of hiding changes only the public one.
            let own = try await backendViews()
            let seen = try await observerViews()
            let ended = model.worlds.contains { world in
                Self.users.allSatisfy {
                    Self.matches(own[$0], world.view(of: $0, by: nil)) && Self.matches(seen[$0], world.view(of: $0, by: Self.observer))
                }
            }
            if ended {
                // What the backend showed tells which order the pending ends ran in: where a device starts hearing
                // next is read from the state that holds.
                model.keep { world in
                    Self.users.allSatisfy {
                        Self.matches(own[$0], world.view(of: $0, by: nil)) && Self.matches(seen[$0], world.view(of: $0, by: Self.observer))
                    }
                }
                return
            }
        }
        let own = try await backendViews()
        let seen = try await observerViews()
        let world = model.world
        let differ = Self.users.filter {
            !Self.matches(own[$0], world.view(of: $0, by: nil)) || !Self.matches(seen[$0], world.view(of: $0, by: Self.observer))
        }
        let details = differ.map { user in
            let shown = "own \(String(describing: own[user])), seen \(String(describing: seen[user]))"
            return "\(user): \(shown), model \(world.view(of: user, by: nil)) / \(world.view(of: user, by: Self.observer))"
        }
        problems.append("time passed 6 s and \(differ) still differ: " + details.joined(separator: "; "))
    }

    /// Creates the users, those of ``PresenceModel/members`` with the role `member`.
    static func createUsers(_ userIds: [String], in app: APIClient) async throws {
        try await app.createUsers(userIds)
        for userId in userIds where PresenceModel.members.contains(userId) {
            let response = try await app.call(.put, "/users/\(userId)", ["role": "member"])
            guard response.status == 200 else { throw TestAppError(message: "role not set: \(response.body)") }
        }
    }

    /// Deletes the user and creates them again (a new user under the same id); every device that heard about them is
    /// told (as for a kick) before the next step, and the deleted user's devices are closed.
    private mutating func delete(_ user: String) async throws {
        // Watchers are told as for a kick of every device (SPEC §10.3), in the view each is shown.
        let world = model.world
        let kicked = PresenceModel.applying(.kick(user, device: nil), to: world, options: model.options)
        // With the bus cut now and then, the departure may be lost with the feed. The resynchronisation then tells
        // subscribers and friends from what the deletion kept, before it reads their relationships again, and the
        // devices whose scope takes the user from the user created again, whose versions go on from it
        // (docs/delivery.md).
        let hearing = devices.filter { key, device in device.user != user && world.hears(device.user, user, scope: device.scope) }
        let expected = hearing.mapValues { kicked.version(of: user, by: $0.user) }.filter { key, version in
            version > world.version(of: user, by: hearing[key]!.user)
        }
        #expect(try await app.call(.delete, "/users/\(user)").status == 204)
        try await Self.createUsers([user], in: app)
        for key in devices.keys where key.hasPrefix("\(user)/") { devices[key] = nil }
        for key in lost.keys where key.hasPrefix("\(user)/") { lost[key] = nil }
        // Sessions lost before the deletion would be sent the new user as news; they are not resumed.
        lost = [:]
        apply(.delete(user))
        // The departure reaches every device that heard about the user before the next step.
        for (key, version) in expected.sorted(by: { $0.key < $1.key }) {
            let device = hearing[key]!.device
            let deadline = ContinuousClock.now + .seconds(3)
            while (Self.knownVersions(device.rawFrames)[user] ?? -1) < version {
                guard ContinuousClock.now < deadline else {
                    problems.append("\(key) was not told that \(user) was deleted (v\(version))")
                    break
                }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        for key in devices.keys { baselines[key]?[user] = nil }
    }

    /// getUserStatus from one device over the WebSocket, or for one user over HTTP.
    private mutating func query(user: String, other: String) async throws {
        let ids: JSONValue = .array((Self.users + [Self.observer]).map(JSONValue.string))
        let own = devices.values.filter { $0.user == user }.sorted { $0.id < $1.id }
        let statuses: [JSONValue]
        if let device = own.first {
            let reply = try await device.device.request("getUserStatus", ["userIds": ids])
            expectOK(reply, "ws getUserStatus")
            statuses = reply["result"]["statuses"].array
        } else {
            statuses = try await app.call(.post, "/users/\(user)/status/query", ["userIds": ids]).body["statuses"].array
        }
        log.append("query by \(user)")
        tally["query", default: 0] += 1
        observe("\(user)'s getUserStatus") { world in
            statuses.flatMap { status in
                Self.differences(status, world.view(of: status["userId"].string ?? "", by: user), "of \(status["userId"].string ?? "?")")
            }
        }
    }

    /// Starts or ends each device's hearing of each user as the model now says, from the versions of `before`.
    private mutating func updateEntitlements(before: PresenceModel) {
        for (key, device) in devices {
            for target in Self.users + [Self.observer] {
                if model.worlds.contains(where: { $0.hears(device.user, target, scope: device.scope) }) {
                    entitledSinceCheck[key, default: []].insert(target)
                }
                if model.worlds.allSatisfy({ $0.hears(device.user, target, scope: device.scope) }) {
                    if baselines[key]?[target] == nil {
                        baselines[key, default: [:]][target] = before.worlds.map { $0.version(of: target, by: device.user) }.min()
                    }
                } else {
                    baselines[key]?[target] = nil
                }
            }
        }
    }

    // MARK: Checks

    /// Records `check`'s differences unless some state of the model has none (keeping those).
    private mutating func observe(_ what: String, _ check: (PresenceModel.World) -> [String]) {
        if model.keep(where: { check($0).isEmpty }) { return }
        problems.append("\(what): \(check(model.world).prefix(4))")
    }

    /// After a burst: the backend's view, every viewer's getUserStatus, then what each device holds, within 3 s.
    mutating func check() async throws {
        let own = try await backendViews()
        observe("backend query") { world in
            Self.users.flatMap { Self.differences(own[$0] ?? .null, world.view(of: $0, by: nil), "own view of \($0)") }
        }
        let ids: JSONValue = .array((Self.users + [Self.observer]).map(JSONValue.string))
        for viewer in Self.users + [Self.observer] {
            let statuses = try await app.call(.post, "/users/\(viewer)/status/query", ["userIds": ids]).body["statuses"].array
            observe("\(viewer)'s getUserStatus") { world in
                statuses.flatMap { status in
                    Self.differences(status, world.view(of: status["userId"].string ?? "", by: viewer), "of \(status["userId"].string ?? "?")")
                }
            }
        }
        guard problems.isEmpty else { return }
        let deadline = ContinuousClock.now + .seconds(3)
        var lost: [String] = []
        repeat {
            lost = []
            let held = devices.mapValues { device in
                Self.latest(device.device.rawFrames)
            }
            let keep = model.worlds.filter { world in missing(held: held, world: world).isEmpty }
            if keep.isEmpty {
                lost = missing(held: held, world: model.world)
                try await Task.sleep(for: .milliseconds(50))
            } else {
                _ = model.keep { keep.contains($0) }
            }
        } while !lost.isEmpty && ContinuousClock.now < deadline
        problems += lost
        for (key, entry) in devices.sorted(by: { $0.key < $1.key }) {
            let frames = entry.device.rawFrames
            var last: [String: Int64] = [:]
            for (target, version, _) in Self.versions(frames) {
                if let previous = last[target], version < previous { problems.append("\(key) went back on \(target): \(previous) → \(version)") }
                last[target] = version
            }
            for (target, version, frame) in Self.eventVersions(frames) where frame >= (framesChecked[key] ?? 0) {
                if !(entitledSinceCheck[key] ?? []).contains(target) {
                    problems.append("\(key) heard \(target) v\(version) without being entitled")
                }
            }
            framesChecked[key] = frames.count
        }
        entitledSinceCheck = [:]
        updateEntitlements(before: model)
    }

    /// Where the devices' latest statuses miss a view that moved past their baselines.
    private func missing(held: [String: [String: (Int, JSONValue)]], world: PresenceModel.World) -> [String] {
        var result: [String] = []
        for (key, device) in devices.sorted(by: { $0.key < $1.key }) {
            for (target, baseline) in (baselines[key] ?? [:]).sorted(by: { $0.key < $1.key }) {
                let view = world.view(of: target, by: device.user)
                guard view.version > baseline else { continue }
                guard let (_, status) = held[key]?[target] else {
                    result.append("\(key) lost \(target): holds nothing, current \(view) (from v\(baseline))")
                    continue
                }
                let differences = Self.differences(status, view, "")
                if !differences.isEmpty { result.append("\(key) holds \(target) \(differences), current \(view) (from v\(baseline))") }
            }
        }
        return result
    }

    /// Every user's own view, as the backend query answers it.
    private func backendViews() async throws -> [String: JSONValue] {
        let ids = JSONValue.array(Self.users.map(JSONValue.string))
        var result: [String: JSONValue] = [:]
        for status in try await app.call(.post, "/status/query", ["userIds": ids]).body["statuses"].array {
            if let userId = status["userId"].string { result[userId] = status }
        }
        return result
    }

    /// Every user's public view, as ``observer`` is shown it.
    private func observerViews() async throws -> [String: JSONValue] {
        let ids = JSONValue.array(Self.users.map(JSONValue.string))
        var result: [String: JSONValue] = [:]
        for status in try await app.call(.post, "/users/\(Self.observer)/status/query", ["userIds": ids]).body["statuses"].array {
            if let userId = status["userId"].string { result[userId] = status }
        }
        return result
    }

    mutating func closeAll() async {
        for entry in devices.values { await entry.device.close() }
        devices = [:]
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

    private mutating func expectOK(_ reply: JSONValue, _ what: String) {
        if reply["ok"] != true { problems.append("\(what) refused: \(reply)") }
    }

    private mutating func expectStatus(_ response: APIResponse, _ what: String) {
        if !(200..<300).contains(response.status) { problems.append("\(what) refused: \(response.status) \(response.body)") }
    }

    // MARK: Comparing

    /// Whether `status` shows `view`.
    static func matches(_ status: JSONValue?, _ view: View) -> Bool { differences(status ?? .null, view, "").isEmpty }

    /// How `status` differs from `view` (empty when it shows it).
    static func differences(_ status: JSONValue, _ view: View, _ what: String) -> [String] {
        var seen = View(
            statusType: PresenceModel.StatusType(rawValue: status["statusType"].string ?? "") ?? .unlogined,
            customStatus: status["customStatus"].string,
            availability: status["availability"].string,
            version: status["version"].int ?? -1,
            expires: status.has("customStatusExpiresAt"),
            masked: view.masked
        )
        if status["statusType"].string == nil { return ["\(what): no status in \(status)"] }
        if view.masked, status.has("lastActiveAt") { seen.masked = false }
        return seen == view ? [] : ["\(what): shows \(seen), expected \(view)"]
    }

    /// How a snapshot frame differs from the model's.
    static func snapshotDifferences(_ frame: JSONValue, expected: [String: View]) -> [String] {
        var result: [String] = []
        var listed: Set<String> = []
        for status in frame["statuses"].array {
            let userId = status["userId"].string ?? ""
            listed.insert(userId)
            guard let view = expected[userId] else {
                result.append("lists \(userId) (\(status))")
                continue
            }
            result += differences(status, view, "of \(userId)")
        }
        for userId in Set(expected.keys).subtracting(listed).sorted() { result.append("leaves out \(userId) (\(expected[userId]!))") }
        return result
    }

    /// How a resume frame differs from the model's: each user the device hears about whose version moved while it was
    /// away is listed as now; anyone else listed must be one it hears about, as now.
    static func resumeDifferences(
        _ statuses: [JSONValue],
        user: String,
        scope: Scope,
        lost: LostSession,
        world: PresenceModel.World,
        newRelations: Bool
    ) -> [String] {
        var result: [String] = []
        var listed: Set<String> = []
        for status in statuses {
            let userId = status["userId"].string ?? ""
            listed.insert(userId)
            guard world.hears(user, userId, scope: scope) else {
                result.append("resends \(userId), which it does not hear about")
                continue
            }
            result += differences(status, world.view(of: userId, by: user), "of \(userId)")
        }
        for (target, state) in world.users.sorted(by: { $0.key < $1.key }) where world.hears(user, target, scope: scope) {
            let now = target == user ? state.version : state.publicVersion
            // A user the device started hearing about while away is required only with ``resumesNewRelations``.
            guard newRelations || lost.heard.contains(target) else { continue }
            // Nor one it hears about only through an `all` scope taken on the resume, who is not online now: nothing
            // lists who moved among everyone while the app had no app-wide session (docs/resume.md).
            let related = world.subscriptions.contains([user, target]) || world.isFriend(user, target)
            if !lost.heard.contains(target), !related, world.view(of: target, by: user).statusType != .online { continue }
            if now != lost.versions[target], !listed.contains(target) {
                result.append("leaves out \(target), which moved from v\(lost.versions[target] ?? -1) to v\(now)")
            }
        }
        return result
    }

    // MARK: Frames

    static func decode(_ text: String) -> JSONValue? { try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) }

    /// The statuses a frame carries: welcome, events (snapshots and resumes too) and replies.
    static func carried(_ frame: JSONValue) -> [JSONValue] {
        (frame["statuses"].array + [frame["status"]] + frame["result"]["statuses"].array + [frame["result"]])
            .filter { $0["userId"].string != nil && $0["version"].int != nil }
    }

    /// Every (user, version, frame index) a device was pushed, in order: the welcome, events, resumes and snapshots.
    /// Replies are left out: a reply and an event about the same user race on the socket (the reply to a setSelfStatus
    /// can overtake the event of an earlier change made on another device), and SPEC §2 has events carry the version
    /// so that a client drops a stale one; what a client holds is its highest version (``latest(_:)``).
    static func versions(_ frames: [String]) -> [(String, Int64, Int)] {
        var result: [(String, Int64, Int)] = []
        for (index, text) in frames.enumerated() {
            guard let frame = decode(text), frame["id"] == nil else { continue }
            for status in carried(frame) { result.append((status["userId"].string!, status["version"].int!, index)) }
        }
        return result
    }

    /// The (user, version, frame index) of every status carried by `onUserStatusChanged` events (not snapshots).
    static func eventVersions(_ frames: [String]) -> [(String, Int64, Int)] {
        var result: [(String, Int64, Int)] = []
        for (index, text) in frames.enumerated() {
            guard let frame = decode(text), frame["event"] == "onUserStatusChanged", frame["snapshot"] != true else { continue }
            for status in frame["statuses"].array {
                if let userId = status["userId"].string, let version = status["version"].int { result.append((userId, version, index)) }
            }
        }
        return result
    }

    /// What a device holds of each user (with its frame index): the status of the highest version it was shown, in a
    /// push or a reply (the later of equal ones), as a client that drops stale events holds it.
    static func latest(_ frames: [String]) -> [String: (Int, JSONValue)] {
        var result: [String: (Int, JSONValue)] = [:]
        for (index, text) in frames.enumerated() {
            guard let frame = decode(text) else { continue }
            for status in carried(frame) {
                let userId = status["userId"].string!
                if let (_, held) = result[userId], (held["version"].int ?? 0) > (status["version"].int ?? 0) { continue }
                result[userId] = (index, status)
            }
        }
        return result
    }

    /// The highest version of each user a device was shown.
    static func knownVersions(_ frames: [String]) -> [String: Int64] {
        var known: [String: Int64] = [:]
        for (user, version, _) in versions(frames) { known[user] = max(known[user] ?? -1, version) }
        return known
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
