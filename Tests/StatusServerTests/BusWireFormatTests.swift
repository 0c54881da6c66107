import Foundation
import Logging
import RedisClient
import StatusCore
import Synchronization
import Testing

@testable import StatusServer

/// The bus wire format of `docs/bus.md`: every message type written by ``EventBus`` reads back as itself, other
/// versions and unknown types are refused rather than misread, and the status messages that the Lua scripts publish
/// (built by hand in `lib.lua`) decode to exactly the status the write returned, whatever its custom status holds.
@Suite(.redis, .timeLimit(.minutes(1))) struct BusWireFormatTests {
    private static let status = UserStatus(
        userId: "alice",
        statusType: .online,
        customStatus: "in a \"meeting\" / back at 5\n😀",
        lastActiveAt: 1_763_800_000_123,
        version: 17,
        onlineDevices: [OnlineDevice(deviceId: "phone-1", platform: .ios)]
    )

    private func roundTrip(_ message: BusMessage) throws -> BusMessage {
        try JSONCoding.decoder.decode(BusMessage.self, from: Data(try JSONCoding.string(message).utf8))
    }

    @Test func everyMessageTypeReadsBackAsItself() throws {
        let messages: [BusMessage] = [
            .statusChanged(StatusChange(appId: "app", change: 1, role: "teacher", status: Self.status)),
            .statusChanged(StatusChange(appId: "app", change: 2, role: nil, status: Self.status)),
            .statusChanged(StatusChange(appId: "app", change: 1, role: nil, lastSeenPrivacy: .nobody, status: Self.status)),
            .relationsChanged(appId: "app", userIds: ["a", "b"]),
            .devicesClosed(appId: "app", userId: "a", devices: [ClosedDevice(deviceId: "d", connection: "c")], reason: "kicked"),
            .configChanged(appId: "app"),
            .deleted(appId: "app", userId: "a"),
            .deleted(appId: "app", userId: nil),
            .masked(appId: "app", userId: "a", viewer: "b", publicVersion: 4),
            .masked(appId: "app", userId: "a", viewer: "b", publicVersion: 4, role: "crew"),
            .masked(appId: "app", userId: "a", viewer: "b", publicVersion: nil),
        ]
        for message in messages { #expect(try roundTrip(message) == message) }
    }

    @Test func theDocumentedShapeIsWhatIsWritten() throws {
        let json = try JSONCoding.string(BusMessage.relationsChanged(appId: "app", userIds: ["a"]))
        #expect(json == #"{"appId":"app","type":"relations","userIds":["a"],"v":1}"#)
        let change = try JSONCoding.string(BusMessage.statusChanged(StatusChange(appId: "app", change: 2, role: nil, status: Self.status)))
        #expect(change.hasPrefix(#"{"appId":"app","change":"devices","publicChange":true,"status":{"#))
        let hidden = try JSONCoding.string(
            BusMessage.statusChanged(StatusChange(appId: "app", change: 1, role: nil, lastSeenPrivacy: .friends, status: Self.status))
        )
        #expect(hidden.hasPrefix(#"{"appId":"app","change":"status","lastSeenPrivacy":"friends","publicChange":true,"status":{"#))
        // What block_side.lua writes by hand reads as the mask it means.
        let mask = #"{"v":1,"type":"mask","appId":"app","userId":"a","viewer":"b","publicVersion":4}"#
        let read = try JSONCoding.decoder.decode(BusMessage.self, from: Data(mask.utf8))
        #expect(read == .masked(appId: "app", userId: "a", viewer: "b", publicVersion: 4))
        let withRole = #"{"v":1,"type":"mask","appId":"app","userId":"a","viewer":"b","publicVersion":4,"role":"crew"}"#
        let readRole = try JSONCoding.decoder.decode(BusMessage.self, from: Data(withRole.utf8))
        #expect(readRole == .masked(appId: "app", userId: "a", viewer: "b", publicVersion: 4, role: "crew"))
        let ended = #"{"v":1,"type":"mask","appId":"app","userId":"a","viewer":"b"}"#
        let end = try JSONCoding.decoder.decode(BusMessage.self, from: Data(ended.utf8))
        #expect(end == .masked(appId: "app", userId: "a", viewer: "b", publicVersion: nil))
    }

    @Test func anUnknownPrivacyValueReadsAsNoneSoTheAppDefaultApplies() throws {
        let json =
            #"{"v":1,"type":"status","appId":"app","change":"status","lastSeenPrivacy":"martians","#
            + #""status":{"userId":"u","statusType":"online","version":1,"onlineDevices":[]}}"#
        guard case .statusChanged(let change) = try JSONCoding.decoder.decode(BusMessage.self, from: Data(json.utf8)) else {
            Issue.record("not a status change")
            return
        }
        #expect(change.lastSeenPrivacy == nil)
    }

    @Test func theAppOfAStatusChangeIsReadWithoutDecoding() throws {
        let forged = UserStatus(userId: "u", statusType: .online, customStatus: #"","type":"status","appId":"victim"#, version: 1)
        let swift = try JSONCoding.string(BusMessage.statusChanged(StatusChange(appId: "app-1", change: 1, role: nil, status: forged)))
        #expect(BusMessage.statusChangeAppId(in: Array(swift.utf8)) == "app-1")
        let lua =
            #"{"v":1,"type":"status","appId":"app_2","change":"status","#
            + #""status":{"userId":"u","statusType":"online","version":1,"onlineDevices":[]}}"#
        #expect(BusMessage.statusChangeAppId(in: Array(lua.utf8)) == "app_2")
        let relations = try JSONCoding.string(BusMessage.relationsChanged(appId: "app-1", userIds: ["status"]))
        #expect(BusMessage.statusChangeAppId(in: Array(relations.utf8)) == nil)
        let forgedRelations = try JSONCoding.string(BusMessage.relationsChanged(appId: "app-1", userIds: [#""type":"status""#]))
        #expect(BusMessage.statusChangeAppId(in: Array(forgedRelations.utf8)) == nil)
    }

    @Test func anotherVersionOrAnUnknownTypeIsRefused() {
        func decode(_ json: String) -> (any Error)? {
            do {
                _ = try JSONCoding.decoder.decode(BusMessage.self, from: Data(json.utf8))
                return nil
            } catch { return error }
        }
        #expect(decode(#"{"v":2,"type":"config","appId":"app"}"#) as? BusWireError == .unsupportedVersion(2))
        #expect(decode(#"{"v":1,"type":"gossip","appId":"app"}"#) as? BusWireError == .unknownType("gossip"))
        #expect(decode(#"{"v":1,"type":"status","appId":"app","change":"mood","status":{}}"#) as? BusWireError == .unknownChange("mood"))
        #expect(decode(#"{"statusChanged":{"_0":{}}}"#) != nil)
    }

    @Test func statusMessagesPublishedByTheScriptsDecodeToTheWrittenStatus() async throws {
        let configuration = try TestRedis.configuration
        let logger = Logger(label: "bus-wire-test")
        let redis = RedisClient(configuration: configuration, logger: logger)
        let scripts = try ScriptLibrary.load()
        let repository = StatusRepository(redis: redis, scripts: scripts, clock: SystemNodeClock())
        let appId = "bw" + UUID().uuidString.prefix(8).lowercased()
        let user = RedisKeys(appId: appId).user("alice")
        _ = try await redis.send("HSET", user.profile, "createdAt", "1", "role", "teacher", "lastSeenPrivacy", "friends")
        let received = Mutex<[(channel: String, message: BusMessage)]>([])
        // The payloads as the scripts wrote them, for the reader without JSONDecoder (``BusMessage/fastStatusChange(_:)``).
        let payloads = Mutex<[[UInt8]]>([])
        // Heard on both channels a status change goes to: the user's channel and the app's channel of the user's slot.
        let channels = [BusChannels.user(appId, "alice"), BusChannels.appSlot(appId, ofUser: "alice")]
        let subscriber = RedisShardSubscriber(client: redis, logger: logger) { event in
            guard case .message(let channel, let payload) = event,
                let message = try? JSONCoding.decoder.decode(BusMessage.self, from: Data(payload)),
                case .statusChanged(let change) = message, change.appId == appId
            else { return }
            received.withLock { $0.append((channel, message)) }
            payloads.withLock { $0.append(payload) }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await subscriber.run() }
            defer { group.cancelAll() }
            try await subscriber.subscribe(channels)
            let record = DeviceRecord(platform: "ios", node: "n", connection: "c1", kind: .webSocket)
            let connected = try await repository.connect(
                appId: appId,
                userId: "alice",
                deviceId: "phone-1",
                record: record,
                rules: StatusRepository.LoginRules(maxDevices: 10, policy: .multi, platform: .ios)
            )
            let written = try await repository.setCustomStatus(appId: appId, userId: "alice", value: Self.status.customStatus, keepMs: 60_000)
            let unchanged = try await repository.setCustomStatus(appId: appId, userId: "alice", value: Self.status.customStatus, keepMs: 60_000)
            #expect(unchanged.write.change == .none)
            let removed = try await repository.remove(appId: appId, userId: "alice", deviceIds: [], leavingAs: .offline, retentionSeconds: 60)
            for _ in 0..<100 where received.withLock({ $0.count }) < 6 { try await Task.sleep(for: .milliseconds(20)) }
            let expected: [BusMessage] = [connected.write.reply, written.write.reply, removed.reply].map {
                .statusChanged(
                    StatusChange(
                        appId: appId,
                        change: 1,
                        role: "teacher",
                        lastSeenPrivacy: .friends,
                        status: $0.status,
                        publicVersion: $0.record.publicVersion,
                        publicChange: true
                    )
                )
            }
            for channel in channels {
                #expect(received.withLock { $0.filter { $0.channel == channel }.map(\.message) } == expected)
            }
            #expect(written.write.reply.status.customStatus == Self.status.customStatus)
            // What the scripts write is read alike without JSONDecoder: always when no string needs an escape (the
            // connect, before the custom status), never differently.
            let heard = payloads.withLock { $0 }
            #expect(heard.count == 6)
            for payload in heard {
                let fast = payload.withUnsafeBytes(BusMessage.fastStatusChange)
                let decoded = try JSONCoding.decoder.decode(BusMessage.self, from: Data(payload))
                if !payload.contains(UInt8(ascii: "\\")) { #expect(fast != nil, "\(String(decoding: payload, as: UTF8.self))") }
                if let fast { #expect(BusMessage.statusChanged(fast) == decoded) }
            }
        }
        await redis.close()
    }
}
