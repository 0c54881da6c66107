import Foundation
import Synchronization

/// The `Date` header of responses (RFC 9110 §6.6.1, IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`), formatted at most
/// once a second, for the responses written without Hummingbird's application (``HotRoutes``), which adds it to the
/// others.
final class HTTPDateHeader: Sendable {
    private let cached = Mutex<(second: Int, text: String)>((second: -1, text: ""))

    /// The header for now.
    var current: String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let second = now.tv_sec
        return cached.withLock { cached in
            if cached.second == second { return cached.text }
            cached = (second, Self.format(epochSeconds: second))
            return cached.text
        }
    }

    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The IMF-fixdate of a time in seconds since the epoch.
    static func format(epochSeconds: Int) -> String {
        var seconds = time_t(epochSeconds)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(1900 + parts.tm_year) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
