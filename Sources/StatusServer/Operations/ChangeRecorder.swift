import Logging
import StatusCore

/// What follows a durable status write: the app's online index is updated and the change goes on the bus.
struct ChangeRecorder: Sendable {
    let statuses: StatusRepository
    let bus: EventBus
    let logger: Logger

    /// Records a write's consequences; a write that changed nothing notifies nobody.
    func record(appId: String, change: StatusRepository.Change, reply: StatusReply) async {
        guard change != .none else { return }
        if change == .status {
            do {
                try await statuses.index(appId: appId, status: reply.status)
            } catch {
                logger.warning("online index update failed", metadata: ["error": "\(error)"])
            }
        }
        await bus.publish(
            .statusChanged(StatusChange(appId: appId, change: change.rawValue, role: reply.role, status: reply.status))
        )
    }
}
