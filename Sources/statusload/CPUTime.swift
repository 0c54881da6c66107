import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// CPU time (user + system) of this process and of the statusd nodes, to charge each delivery its cost on both sides.
enum CPUTime {
    /// This process's CPU seconds so far (`getrusage(RUSAGE_SELF)`).
    static func ownSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// The CPU seconds of `pid` so far (`utime + stime` of `/proc/<pid>/stat`), or nil when it cannot be read.
    static func processSeconds(pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After the command name: state (field 3), ..., utime (field 14), stime (field 15).
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The sum over `pids` (those readable), or nil when none is.
    static func processSeconds(pids: [Int32]) -> Double? {
        let values = pids.compactMap { processSeconds(pid: $0) }
        return values.isEmpty ? nil : values.reduce(0, +)
    }
}
