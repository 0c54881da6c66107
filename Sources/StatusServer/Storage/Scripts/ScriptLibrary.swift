import Foundation
import RedisClient

/// The Lua scripts of `Scripts/`, each prefixed with the shared prelude `lib.lua`, and the fence every call of them
/// carries (``WriteFence``: the prelude refuses a call that reached Redis after its caller gave up on it).
///
/// A class: the repositories and runners that hold it are copied on every request, and a copy of a struct of 32
/// scripts (three strings each) retained and released each string; a reference is one count.
final class ScriptLibrary: Sendable {
    /// Gives each call its deadline on Redis's clock, the first argument of every script.
    let fence: WriteFence
    let setCustomStatus: RedisScript
    let deviceConnect: RedisScript
    let connectAdmission: RedisScript
    let deviceState: RedisScript
    let devicesRemove: RedisScript
    let subscribe: RedisScript
    let subscribeTarget: RedisScript
    let unsubscribe: RedisScript
    let queryRateLimit: RedisScript
    let presenceIndex: RedisScript
    let appCreate: RedisScript
    let appConfigUpdate: RedisScript
    let profilePut: RedisScript
    let appDeleteMark: RedisScript
    let appDeleteClaim: RedisScript
    let appDeleteFinish: RedisScript
    let statusReadCopy: RedisScript
    let userActivity: RedisScript
    let webhookEnqueue: RedisScript
    let webhookTake: RedisScript
    let webhookSettle: RedisScript
    let webhookRetry: RedisScript
    let webhookIndexAdd: RedisScript
    let webhookIndexRemove: RedisScript
    let customStatusExpire: RedisScript
    let dueTake: RedisScript
    let dueDone: RedisScript
    let graceEnd: RedisScript
    let dueAppMark: RedisScript
    let dueAppsTake: RedisScript
    let dueAppSettle: RedisScript
    let blockSide: RedisScript
    let statusRetire: RedisScript

    /// Every script, for `SCRIPT LOAD` at start.
    var all: [RedisScript] {
        [
            setCustomStatus, deviceConnect, connectAdmission, deviceState, devicesRemove, subscribe, subscribeTarget, unsubscribe, queryRateLimit,
            presenceIndex,
            appCreate, appConfigUpdate, profilePut, appDeleteMark, appDeleteClaim, appDeleteFinish,
            statusReadCopy, userActivity, webhookEnqueue, webhookTake, webhookSettle, webhookRetry, webhookIndexAdd,
            webhookIndexRemove, customStatusExpire, dueTake, dueDone, graceEnd, dueAppMark, dueAppsTake, dueAppSettle,
            blockSide, statusRetire,
        ]
    }

    /// Loads the scripts (embedded in the binary); their calls carry `fence`'s deadlines.
    static func load(fence: WriteFence = .open) throws -> ScriptLibrary {
        try ScriptLibrary(fence: fence)
    }

    private init(fence: WriteFence) throws {
        let prelude = try Self.source("lib")
        func script(_ name: String) throws -> RedisScript {
            RedisScript(name: name, source: prelude + "\n" + (try Self.source(name)))
        }
        self.fence = fence
        setCustomStatus = try script("set_custom_status")
        deviceConnect = try script("device_connect")
        connectAdmission = try script("connect_admission")
        deviceState = try script("device_state")
        devicesRemove = try script("devices_remove")
        subscribe = try script("subscribe")
        subscribeTarget = try script("subscribe_target")
        unsubscribe = try script("unsubscribe")
        queryRateLimit = try script("query_rate_limit")
        presenceIndex = try script("presence_index")
        appCreate = try script("app_create")
        appConfigUpdate = try script("app_config_update")
        profilePut = try script("profile_put")
        appDeleteMark = try script("app_delete_mark")
        appDeleteClaim = try script("app_delete_claim")
        appDeleteFinish = try script("app_delete_finish")
        statusReadCopy = try script("status_read_copy")
        userActivity = try script("user_activity")
        webhookEnqueue = try script("webhook_enqueue")
        webhookTake = try script("webhook_take")
        webhookSettle = try script("webhook_settle")
        webhookRetry = try script("webhook_retry")
        webhookIndexAdd = try script("webhook_index_add")
        webhookIndexRemove = try script("webhook_index_remove")
        customStatusExpire = try script("custom_status_expire")
        dueTake = try script("due_take")
        dueDone = try script("due_done")
        graceEnd = try script("grace_end")
        dueAppMark = try script("due_app_mark")
        dueAppsTake = try script("due_apps_take")
        dueAppSettle = try script("due_app_settle")
        blockSide = try script("block_side")
        statusRetire = try script("status_retire")
    }

    /// A script's source, embedded in the binary (``EmbeddedResources``).
    private static func source(_ name: String) throws -> String {
        guard let text = EmbeddedResources.text("Scripts/\(name).lua") else { throw ScriptLibraryError(name: name) }
        return text
    }
}

/// A script file missing from the bundle.
struct ScriptLibraryError: Error, CustomStringConvertible {
    let name: String
    var description: String { "missing Lua script \(name).lua" }
}
