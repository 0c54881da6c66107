import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// The twins of the scripts that write a user's status decode their replies exactly as the scripts' headers say, and
/// refuse any other shape with an error naming the script.
@Suite struct StatusWriteScriptTwinTests {
    @Test func aStatusReplyIsOwnedByTheUserItWasReadFor() throws {
        let reply = try StatusReply(Canned.status[...]).owned(by: "alice")
        #expect(reply.status.userId == "alice")
        #expect(reply.status.statusType == .online)
        #expect(reply.status.customStatus == "busy")
        #expect(reply.status.version == 7)
        #expect(reply.status.onlineDevices?.map(\.deviceId) == ["d1"])
        #expect(reply.role == "admin")
        #expect(throws: StatusReplyError.self) { try StatusReply(Canned.status.prefix(11)) }
    }

    @Test func setCustomStatus() throws {
        let reply = try SetCustomStatus.Reply(Canned.array([Canned.int(1), Canned.int(0), Canned.text("busy"), Canned.int(1)] + Canned.status))
        #expect(reply.change == .status)
        #expect(!reply.publicChange)
        #expect(reply.previousAvailability == .busy)
        #expect(reply.customStatusChanged)
        #expect(reply.status.status.version == 7)
        let unknownAvailability = try SetCustomStatus.Reply(
            Canned.array([Canned.int(0), Canned.int(0), Canned.text(""), Canned.int(0)] + Canned.status)
        )
        #expect(unknownAvailability.previousAvailability == .available)
        #expect(unknownAvailability.change == StatusRepository.Change.none)
        expectMalformed("set_custom_status.lua") { _ = try SetCustomStatus.Reply(Canned.array([Canned.int(1), Canned.int(0)])) }
        expectMalformed("set_custom_status.lua") {
            try SetCustomStatus.Reply(Canned.array([Canned.int(9), Canned.int(0), Canned.text(""), Canned.int(0)] + Canned.status))
        }
        expectMalformed("set_custom_status.lua") { _ = try SetCustomStatus.Reply(Canned.int(1)) }
        expectMalformed("set_custom_status.lua") {
            try SetCustomStatus.Reply(Canned.array([Canned.text("x"), Canned.int(0), Canned.text(""), Canned.int(0)] + Canned.status))
        }
    }

    @Test func setCustomStatusArgumentsFollowTheHeader() {
        let arguments = SetCustomStatus.Arguments(
            value: nil,
            appId: "app",
            userId: "u",
            keep: true,
            availability: .busy,
            expiresAt: 42
        )
        #expect(arguments.strings == ["", "app", "u"] + BusChannels.statusArguments("app", "u") + ["1", "busy", "42", "0"])
    }

    @Test func customStatusExpire() throws {
        guard case .cleared(true, let status) = try CustomStatusExpire.Reply(Canned.array([Canned.int(1), Canned.int(1)] + Canned.status))
        else {
            Issue.record("expected a cleared custom status")
            return
        }
        #expect(status.status.customStatus == "busy")
        guard case .nothingToClear = try CustomStatusExpire.Reply(Canned.array([Canned.int(0)])) else {
            Issue.record("expected nothing to clear")
            return
        }
        guard case .later(1234) = try CustomStatusExpire.Reply(Canned.array([Canned.int(2), Canned.text("1234")])) else {
            Issue.record("expected a later moment")
            return
        }
        expectMalformed("custom_status_expire.lua") { _ = try CustomStatusExpire.Reply(Canned.array([])) }
        expectMalformed("custom_status_expire.lua") { _ = try CustomStatusExpire.Reply(Canned.array([Canned.int(2)])) }
        expectMalformed("custom_status_expire.lua") { _ = try CustomStatusExpire.Reply(Canned.array([Canned.int(3)])) }
        expectMalformed("custom_status_expire.lua") { _ = try CustomStatusExpire.Reply(Canned.array([Canned.int(1), Canned.int(1)])) }
        expectMalformed("custom_status_expire.lua") { _ = try CustomStatusExpire.Reply(Canned.array([Canned.int(0), Canned.int(1)])) }
    }

    @Test func deviceConnect() throws {
        let reply = try DeviceConnect.Reply(
            Canned.array(
                [Canned.int(2), Canned.device, Canned.text("c-1 1700000000000"), Canned.int(2)]
                    + [Canned.text("k1"), Canned.device, Canned.text("loginPolicy")]
                    + [Canned.text("k2"), Canned.device, Canned.text("somethingNew")] + Canned.status
            )
        )
        #expect(reply.change == .devices)
        #expect(reply.replaced?.platform == "ios")
        #expect(reply.resumePoint?.connection == "c-1")
        // A kick whose reason this version does not know is left out, as before.
        #expect(reply.kicked.map(\.deviceId) == ["k1"])
        #expect(reply.kicked.first?.reason == .loginPolicy)
        #expect(reply.status.status.onlineDevices?.count == 1)
        let fresh = try DeviceConnect.Reply(Canned.array([Canned.int(1), Canned.text(""), Canned.text(""), Canned.int(0)] + Canned.status))
        #expect(fresh.replaced == nil)
        #expect(fresh.resumePoint == nil)
        #expect(fresh.kicked.isEmpty)
        // A resume point that does not parse is no resume point.
        let garbled = try DeviceConnect.Reply(Canned.array([Canned.int(1), Canned.text(""), Canned.text("x"), Canned.int(0)] + Canned.status))
        #expect(garbled.resumePoint == nil)
        // The kicked count says more devices than the reply holds.
        expectMalformed("device_connect.lua") {
            try DeviceConnect.Reply(Canned.array([Canned.int(1), Canned.text(""), Canned.text(""), Canned.int(5), Canned.text("k1")]))
        }
        expectMalformed("device_connect.lua") {
            _ = try DeviceConnect.Reply(Canned.array([Canned.int(1), Canned.text(""), Canned.text(""), Canned.int(-1)]))
        }
        // A resume point where the kicked count belongs.
        expectMalformed("device_connect.lua") {
            _ = try DeviceConnect.Reply(Canned.array([Canned.int(1), Canned.text(""), Canned.int(0)] + Canned.status))
        }
        expectMalformed("device_connect.lua") { _ = try DeviceConnect.Reply(Canned.array([Canned.int(1)])) }
        expectMalformed("device_connect.lua") { _ = try DeviceConnect.Reply(.null) }
    }

    @Test func deviceStateReport() throws {
        let reply = try DeviceStateReport.Reply(Canned.array([Canned.int(1), Canned.int(2)] + Canned.status))
        #expect(reply.found)
        #expect(reply.change == .devices)
        expectMalformed("device_state.lua") { _ = try DeviceStateReport.Reply(Canned.array([Canned.int(1), Canned.int(2)])) }
        expectMalformed("device_state.lua") { _ = try DeviceStateReport.Reply(Canned.array([Canned.int(3), Canned.int(0)] + Canned.status)) }
    }

    @Test func devicesRemove() throws {
        let reply = try DevicesRemove.Reply(
            Canned.array(
                [Canned.int(1), Canned.int(1), Canned.int(2), Canned.text("a"), Canned.device, Canned.text("b"), Canned.text("")] + Canned.status
            )
        )
        #expect(reply.change == .status)
        #expect(reply.clearedCustomStatus)
        // A removed device whose record cannot be read is left out, as before.
        #expect(reply.removed.map(\.deviceId) == ["a"])
        expectMalformed("devices_remove.lua") { _ = try DevicesRemove.Reply(Canned.array([Canned.int(1), Canned.int(0), Canned.int(3)])) }
        expectMalformed("devices_remove.lua") { _ = try DevicesRemove.Reply(Canned.array([Canned.int(1), Canned.int(0)])) }
    }

    @Test func devicesRemoveKeysAndArgumentsFollowTheHeader() {
        let user = RedisKeys(appId: "app").user("u")
        #expect(DevicesRemove.Keys(user: user, resumeDeviceId: nil).strings == [user.status, user.profile, user.devices, user.subscriptions])
        #expect(DevicesRemove.Keys(user: user, resumeDeviceId: "d").strings.last == user.resume("d"))
        var arguments = DevicesRemove.Arguments(
            mode: .offline,
            retentionMs: 1000,
            connectionId: nil,
            silentForMs: 5,
            appId: "app",
            userId: "u",
            resumePoint: nil,
            resumeTTLms: 60_000,
            graceMs: 0,
            deviceIds: ["d"]
        )
        let channels = BusChannels.statusArguments("app", "u")
        #expect(arguments.strings == ["offline", "1000", "", "5", "app", "u"] + channels + ["", "0", "0", "0", "d"])
        // The point goes without its moment, which the script takes on Redis's clock, `lostAgoMs` before it runs.
        arguments.resumePoint = ResumePoint.Pending(connection: "c1", lostAgoMs: 1500, delivered: [0xab: 3])
        #expect(arguments.strings == ["offline", "1000", "", "5", "app", "u"] + channels + ["c1 #ab:3", "60000", "0", "1500", "d"])
        #expect(arguments.resumePoint?.stored(atRedisMs: 10_000) == ResumePoint(stored: "c1 8500 #ab:3"))
        // On a single server the online index's keys come last (after the resume point's), and its two arguments
        // before the deviceIds.
        let app = RedisKeys(appId: "app")
        let alongside = DevicesRemove.Alongside(app: app, keepMs: 90_000)
        let indexKeys = [app.online, app.onlineVersions, app.recentChanges, app.onlineRoles]
        #expect(
            DevicesRemove.Keys(user: user, resumeDeviceId: "d", alongside: alongside).strings
                == [user.status, user.profile, user.devices, user.subscriptions, user.resume("d")] + indexKeys
        )
        #expect(
            DevicesRemove.Keys(user: user, resumeDeviceId: nil, alongside: alongside).strings
                == [user.status, user.profile, user.devices, user.subscriptions] + indexKeys
        )
        arguments.alongside = alongside
        #expect(
            arguments.strings
                == ["offline", "1000", "", "5", "app", "u"] + channels + ["c1 #ab:3", "60000", "0", "1500", "90000", app.onlineRolePrefix, "d"]
        )
    }

    @Test func graceEnd() throws {
        guard
            case .ended(true, false, nil, let status) = try GraceEndScript.Reply(
                Canned.array([Canned.int(1), Canned.int(1), Canned.int(0), Canned.text("")] + Canned.status)
            )
        else {
            Issue.record("expected an ended grace")
            return
        }
        #expect(status.status.statusType == .online)
        guard
            case .ended(false, true, 5000, _) = try GraceEndScript.Reply(
                Canned.array([Canned.int(1), Canned.int(0), Canned.int(1), Canned.text("5000")] + Canned.status)
            )
        else {
            Issue.record("expected an ended grace with another still running")
            return
        }
        guard case .later(1234) = try GraceEndScript.Reply(Canned.array([Canned.int(2), Canned.text("1234")])) else {
            Issue.record("expected a later end")
            return
        }
        guard case .none = try GraceEndScript.Reply(Canned.array([Canned.int(0)])) else {
            Issue.record("expected no grace")
            return
        }
        expectMalformed("grace_end.lua") { _ = try GraceEndScript.Reply(Canned.array([Canned.int(2)])) }
        expectMalformed("grace_end.lua") { _ = try GraceEndScript.Reply(Canned.array([Canned.int(2), Canned.text("soon")])) }
        expectMalformed("grace_end.lua") { _ = try GraceEndScript.Reply(Canned.array([Canned.int(3)])) }
        expectMalformed("grace_end.lua") { _ = try GraceEndScript.Reply(Canned.array([Canned.int(1), Canned.int(1)])) }
        expectMalformed("grace_end.lua") {
            _ = try GraceEndScript.Reply(Canned.array([Canned.int(1), Canned.int(0), Canned.int(1), Canned.text("soon")] + Canned.status))
        }
    }

    /// `ht` as `lib.lua` writes it: `offline`, `unlogined`, or during the grace of becoming invisible (SPEC §10.5)
    /// `online:<availability>:<expiry>:<custom status>`, whose custom status may hold colons.
    @Test func whatOthersSeeOfAnInvisibleUserIsReadFromItsStoredForm() {
        #expect(
            StatusFields.hidden("online:busy:4000:lunch: soup", lastActiveAt: 800)
                == PresenceRecord.Hidden(
                    statusType: .online,
                    lastActiveAt: 800,
                    customStatus: "lunch: soup",
                    availability: .busy,
                    customStatusExpiresAt: 4000
                )
        )
        #expect(
            StatusFields.hidden("online:away::", lastActiveAt: 800)
                == PresenceRecord.Hidden(statusType: .online, lastActiveAt: 800, customStatus: nil, availability: .away)
        )
        #expect(StatusFields.hidden("unlogined", lastActiveAt: nil) == PresenceRecord.Hidden(statusType: .unlogined, lastActiveAt: nil))
        #expect(StatusFields.hidden(nil, lastActiveAt: 5) == PresenceRecord.Hidden(statusType: .offline, lastActiveAt: 5))
        #expect(StatusFields.hidden("online", lastActiveAt: 5) == PresenceRecord.Hidden(statusType: .offline, lastActiveAt: 5))
    }

    @Test func presenceIndex() throws {
        #expect(try PresenceIndex.Reply(Canned.int(3)).value == 3)
        #expect(throws: StatusReplyError.self) { try PresenceIndex.Reply(Canned.text("3")) }
        let arguments = PresenceIndex.Arguments(
            keepMs: 10,
            rolePrefix: "p:",
            updates: [.init(userId: "a", version: 2, online: true), .init(userId: "b", version: 5, online: false, role: "member")]
        )
        #expect(arguments.strings == ["10", "p:", "a", "2", "1", "", "b", "5", "0", "member"])
        let keys = RedisKeys(appId: "app")
        #expect(PresenceIndex.Keys(app: keys).strings == [keys.online, keys.onlineVersions, keys.recentChanges, "st:{app}:onlinerole"])
        #expect(keys.online(role: "member") == "st:{app}:online:role:member")
    }
}

/// Expects `body` to throw a ``StatusReplyError`` naming `script`.
func expectMalformed(_ script: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected a malformed reply of \(script)", sourceLocation: sourceLocation)
    } catch let error as StatusReplyError {
        #expect(error.script == script, "\(error)", sourceLocation: sourceLocation)
        #expect(!error.problem.isEmpty, sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected a StatusReplyError, got \(error)", sourceLocation: sourceLocation)
    }
}
