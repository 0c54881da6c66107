import Logging
import StatusCore

/// What follows a durable presence write besides its bus message (which the write's own script publishes): the app's
/// online index and its log of recent changes (``RecentChanges``), kept in keys of their own (app-wide, so in another
/// hash slot than the user's keys).
struct ChangeRecorder: Sendable {
    /// Batches the index writes of each app (one script call per round trip, not per change).
    let onlineIndex: OnlineIndexWriter
    /// Two lease periods of this deployment, part of how long the log of recent changes is kept.
    let leaseSeconds: Int
    let logger: Logger

    /// Updates the online index after a connect or a departure. Only a `status` change of those moves `statusType`
    /// (into or out of `online`); a `devices` change or none leaves the index alone and costs no round trip.
    func recordPresence(app: AppRecord, change: StatusRepository.Change, reply: StatusReply) async {
        guard change == .status else { return }
        do {
            let status = reply.status
            try await onlineIndex.apply(
                appId: app.appId,
                OnlineIndexWriter.Update(userId: status.userId, version: status.version, online: status.statusType == .online, role: reply.role),
                keepMs: keepMs(app.config)
            )
        } catch {
            logger.warning("online index update failed", metadata: ["error": "\(error)"])
        }
    }

    /// How long the app's log of recent changes keeps an entry.
    func keepMs(_ config: AppConfig) -> Int64 {
        RecentChanges.keepMs(heartbeatTimeoutSeconds: config.heartbeatTimeoutSeconds, leaseSeconds: leaseSeconds)
    }
}
