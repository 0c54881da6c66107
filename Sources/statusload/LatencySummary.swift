import Histogram

/// Percentiles of a latency histogram recorded in microseconds, in milliseconds.
struct LatencySummary: Codable, Sendable {
    var count: UInt64
    var p50: Double
    var p90: Double
    var p99: Double
    var p999: Double
    var max: Double

    init(_ histogram: Histogram<UInt64>) {
        count = histogram.totalCount
        func ms(_ value: UInt64) -> Double { (Double(value) / 1000 * 100).rounded() / 100 }
        if histogram.totalCount == 0 {
            p50 = 0
            p90 = 0
            p99 = 0
            p999 = 0
            max = 0
        } else {
            p50 = ms(histogram.valueAtPercentile(50))
            p90 = ms(histogram.valueAtPercentile(90))
            p99 = ms(histogram.valueAtPercentile(99))
            p999 = ms(histogram.valueAtPercentile(99.9))
            max = ms(histogram.max)
        }
    }

    /// A histogram for latencies in microseconds, up to 10 minutes.
    static func histogram() -> Histogram<UInt64> {
        Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: .three)
    }
}
