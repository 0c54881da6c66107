import Foundation
import Synchronization

/// Prints one progress line per second while the run lasts: phase, connected devices, changes and events of the
/// current step with their per-second rates, the step's p99 so far and the nodes' RSS.
final class ProgressReporter: Sendable {
    private let registry: DeviceRegistry
    private let stats: LoadStats
    private let pids: [Int32]
    private let phase = Mutex("setup")
    private let stopped = Atomic<Bool>(false)

    init(registry: DeviceRegistry, stats: LoadStats, pids: [Int32]) {
        self.registry = registry
        self.stats = stats
        self.pids = pids
    }

    func enter(_ name: String) { phase.withLock { $0 = name } }
    func stop() { stopped.store(true, ordering: .relaxed) }

    func run() async {
        let start = ContinuousClock.now
        var previous = await stats.snapshot(histograms: false)
        while !stopped.load(ordering: .relaxed) {
            // Short sleeps so the reporter notices the end of the run quickly.
            for _ in 0..<10 where !stopped.load(ordering: .relaxed) { try? await Task.sleep(for: .milliseconds(100)) }
            if stopped.load(ordering: .relaxed) { return }
            let now = await stats.snapshot()
            let elapsed = (ContinuousClock.now - start).components.seconds
            let name = phase.withLock { $0 }
            var line = String(format: "[%4ds] ", elapsed) + name.padding(toLength: 12, withPad: " ", startingAt: 0)
            line += " connected \(registry.connectedCount)"
            line += " (+\(max(now.connects - previous.connects, 0))/s, failed \(now.connectFailures), dropped \(now.drops))"
            if now.changesSent > 0 || previous.changesSent > 0 {
                let sent = max(now.changesSent - previous.changesSent, 0)
                let received = max(now.receivedTotal - previous.receivedTotal, 0)
                line += " | changes \(now.changesSent) (+\(sent)/s, failed \(now.changesFailed))"
                line += " | events \(now.receivedTotal)/\(now.expectedTotal) (+\(received)/s)"
                line += String(format: " p99 %.2f ms", Double(now.latency.totalCount > 0 ? now.latency.valueAtPercentile(99) : 0) / 1000)
            }
            if let rss = ProcessMemory.residentBytes(pids: pids) { line += " | rss " + LoadReport.mib(rss) }
            Console.line(line)
            previous = now
        }
    }
}
