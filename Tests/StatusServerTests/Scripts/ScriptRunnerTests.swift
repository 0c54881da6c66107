import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// The runner maps every script's error replies alike, and names the script of a reply its twin cannot read.
@Suite struct ScriptRunnerTests {
    @Test func errorRepliesBecomeTheirSPECErrors() {
        #expect(ScriptErrorReply.statusError("USER_NOT_FOUND")?.code == .userNotFound)
        #expect(ScriptErrorReply.statusError("ERR user_script:12: USER_NOT_FOUND")?.code == .userNotFound)
        #expect(ScriptErrorReply.statusError("TOKEN_REVOKED")?.code == .unauthorized)
        let limited = ScriptErrorReply.statusError("CONNECT_RATE_LIMITED 350")
        #expect(limited?.code == .rateLimited)
        #expect(limited?.retryAfterMs == 350)
        #expect(ScriptErrorReply.statusError("OOM command not allowed") == nil)
    }

    @Test func aPipelinedErrorReplyIsThrownBeforeTheTwinReadsIt() {
        #expect(throws: StatusError.self) { try ScriptRunner.decode(DeviceConnect.self, .error("TOKEN_REVOKED")) }
        #expect(throws: StatusError.self) { try ScriptRunner.decode(SetCustomStatus.self, .error("USER_NOT_FOUND")) }
        #expect(throws: RedisClientError.self) { try ScriptRunner.decode(DevicesRemove.self, .error("ERR something else")) }
        // Handed to the twin itself, an error reply is a malformed reply.
        expectMalformed("device_connect.lua") { _ = try DeviceConnect.Reply(.error("TOKEN_REVOKED")) }
    }

    @Test func aSharedShapeIsNamedByItsScript() {
        expectMalformed("SubscribeTarget") { _ = try ScriptRunner.decode(SubscribeTarget.self, Canned.text("1")) }
        expectMalformed("DueDone") { _ = try ScriptRunner.decode(DueDone.self, .null) }
    }

    @Test func everyTwinNamesAScriptOfTheLibrary() throws {
        let library = try ScriptLibrary.load()
        let twins: [any StatusScript.Type] = [
            SetCustomStatus.self, CustomStatusExpire.self, DeviceConnect.self, ConnectAdmission.self, DeviceStateReport.self, DevicesRemove.self,
            GraceEndScript.self, PresenceIndex.self, StatusReadCopy.self, UserActivity.self, SubscribeTarget.self, Subscribe.self,
            Unsubscribe.self, QueryRateLimit.self, AppCreate.self, AppConfigUpdate.self, ProfilePut.self, AppDeleteMark.self,
            AppDeleteClaim.self, AppDeleteFinish.self, WebhookEnqueue.self, WebhookTakeScript.self, WebhookSettle.self,
            WebhookRetry.self, WebhookIndexAdd.self, WebhookIndexRemove.self, DueTake.self, DueDone.self, DueAppMark.self,
            DueAppsTake.self, DueAppSettle.self, BlockSide.self, StatusRetire.self,
        ]
        #expect(Set(twins.map { $0.script(in: library).name }) == Set(library.all.map(\.name)))
        #expect(twins.count == library.all.count)
    }
}
