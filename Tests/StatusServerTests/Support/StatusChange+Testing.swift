import StatusCore

@testable import StatusServer

extension StatusChange {
    /// A status change of `userId` in app `app`: online at `version`, no device listed (what the index tests deliver).
    static func online(_ userId: String, version: Int64) -> StatusChange {
        let status = UserStatus(userId: userId, statusType: .online, customStatus: nil, lastActiveAt: nil, version: version, onlineDevices: [])
        return StatusChange(appId: "app", change: StatusRepository.Change.status.rawValue, role: nil, status: status)
    }
}
