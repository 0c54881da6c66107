import Foundation

/// Monotonic and wall-clock time stamps.
enum MonotonicClock {
    /// Nanoseconds of a monotonic clock (not affected by wall-clock changes).
    static func nanos() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Wall-clock epoch milliseconds (carried in the custom status).
    static func epochMs() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }
}
