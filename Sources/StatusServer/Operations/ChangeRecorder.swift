import Logging
import StatusCore

/// What follows a durable presence write besides its bus message (which the write's own script publishes): the app's
/// online index, kept in a key of its own (app-wide, so in another hash slot than the user's keys).
struct ChangeRecorder: Sendable {
    let statuses: StatusRepository
    let logger: Logger

    /// Updates the online index after a connect or a departure. Only a `status` change of those moves `statusType`
    /// (into or out of `online`); a `devices` change or none leaves the index alone and costs no round trip.
    func recordPresence(appId: String, change: StatusRepository.Change, reply: StatusReply) async {
        guard change == .status else { return }
        do {
            try await statuses.index(appId: appId, status: reply.status)
        } catch {
            logger.warning("online index update failed", metadata: ["error": "\(error)"])
        }
    }
}
