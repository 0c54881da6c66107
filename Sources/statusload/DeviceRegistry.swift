import Synchronization

/// The devices that are connected right now (welcome received), per node, with the link to each, and the number of
/// connected devices per user and node: what a change is expected to reach is computed from it at send time. Touched
/// once per connect, disconnect and change, never per event received.
final class DeviceRegistry: Sendable {
    /// A connected device picked to make a change, and how many events the change should produce on each node.
    struct Pick {
        var device: Int
        var user: Int
        var link: DeviceLink
        var expectedPerNode: [Int]
    }

    private struct State {
        var connected: [[Int32]]
        var position: [Int32]
        /// The node each connected device is on (a device that fails over moves).
        var nodeOf: [Int8]
        var links: [DeviceLink?]
        var perUser: [[Int32]]
        var pendingFirstAttempts = 0
        var activeAttempts = 0
        var stopping = false
    }

    let nodeCount: Int
    let userCount: Int
    let graph: SocialGraph
    let multiDeviceSync: Bool
    /// Devices start split round-robin over the first `initialNodes` nodes; the others take only devices that fail over.
    let initialNodes: Int
    private let state: Mutex<State>

    init(deviceCount: Int, nodeCount: Int, graph: SocialGraph, multiDeviceSync: Bool, initialNodes: Int? = nil) {
        self.nodeCount = nodeCount
        self.initialNodes = min(max(initialNodes ?? nodeCount, 1), nodeCount)
        self.userCount = graph.userCount
        self.graph = graph
        self.multiDeviceSync = multiDeviceSync
        state = Mutex(
            State(
                connected: Array(repeating: [], count: nodeCount),
                position: Array(repeating: -1, count: deviceCount),
                nodeOf: Array(repeating: 0, count: deviceCount),
                links: Array(repeating: nil, count: deviceCount),
                perUser: Array(repeating: Array(repeating: 0, count: graph.userCount), count: nodeCount)
            )
        )
    }

    /// The node a device first connects to.
    func node(of device: Int) -> Int { device % initialNodes }
    func user(of device: Int) -> Int { device % userCount }

    var isStopping: Bool { state.withLock { $0.stopping } }
    var connectedCount: Int { state.withLock { $0.connected.reduce(0) { $0 + $1.count } } }
    var pendingFirstAttempts: Int { state.withLock { $0.pendingFirstAttempts } }
    /// Connection attempts whose channel has not closed yet (the teardown waits for none).
    var activeAttempts: Int { state.withLock { $0.activeAttempts } }

    /// Users with at least one connected device (on any node).
    var connectedUserCount: Int {
        state.withLock { state in
            (0..<userCount).reduce(0) { count, user in
                count + (state.perUser.contains { $0[user] > 0 } ? 1 : 0)
            }
        }
    }

    func connectedCount(node: Int) -> Int { state.withLock { $0.connected[node].count } }

    /// Whether the device is connected (welcome received, not closed since).
    func isConnected(_ device: Int) -> Bool { state.withLock { $0.position[device] >= 0 } }

    /// A device task starts its first connection attempt (bounds the connect phase's concurrency).
    func beginFirstAttempt() { state.withLock { $0.pendingFirstAttempts += 1 } }
    func endFirstAttempt() { state.withLock { $0.pendingFirstAttempts -= 1 } }
    func beginAttempt() { state.withLock { $0.activeAttempts += 1 } }
    func endAttempt() { state.withLock { $0.activeAttempts -= 1 } }

    /// The device received its welcome from `node`. Returns false (and the device should close) when the run is
    /// stopping.
    func connected(_ device: Int, node: Int, link: DeviceLink) -> Bool {
        let user = user(of: device)
        return state.withLock { state in
            guard !state.stopping else { return false }
            guard state.position[device] < 0 else { return true }
            state.nodeOf[device] = Int8(truncatingIfNeeded: node)
            state.position[device] = Int32(state.connected[node].count)
            state.connected[node].append(Int32(device))
            state.links[device] = link
            state.perUser[node][user] += 1
            return true
        }
    }

    /// The device's connection ended.
    func disconnected(_ device: Int) {
        let user = user(of: device)
        state.withLock { state in
            let position = Int(state.position[device])
            guard position >= 0 else { return }
            let node = Int(state.nodeOf[device])
            let last = state.connected[node].removeLast()
            if Int(last) != device {
                state.connected[node][position] = last
                state.position[Int(last)] = Int32(position)
            }
            state.position[device] = -1
            state.links[device] = nil
            state.perUser[node][user] -= 1
        }
    }

    /// A random connected device (on `node`, or on any node), with the events its user's change should produce.
    func pick(node requested: Int?, using generator: inout SplitMix64) -> Pick? {
        let graph = graph
        let multiDeviceSync = multiDeviceSync
        return state.withLock { state -> Pick? in
            let total = state.connected.reduce(0) { $0 + $1.count }
            var node = 0
            var offset = 0
            if let requested {
                guard requested < state.connected.count, !state.connected[requested].isEmpty else { return nil }
                node = requested
                offset = Int(generator.next() % UInt64(state.connected[requested].count))
            } else {
                guard total > 0 else { return nil }
                offset = Int(generator.next() % UInt64(total))
                while offset >= state.connected[node].count {
                    offset -= state.connected[node].count
                    node += 1
                }
            }
            let device = Int(state.connected[node][offset])
            guard let link = state.links[device] else { return nil }
            let user = device % graph.userCount
            var expected = [Int](repeating: 0, count: state.connected.count)
            for index in 0..<state.connected.count {
                let counts = state.perUser[index]
                var sum = multiDeviceSync ? Int(counts[user]) : 0
                for listener in graph.audience[user] { sum += Int(counts[Int(listener)]) }
                expected[index] = sum
            }
            return Pick(device: device, user: user, link: link, expectedPerNode: expected)
        }
    }

    /// Ends the run: no new connection is registered and every connected device is told to close.
    func stop() {
        let links = state.withLock { state -> [DeviceLink] in
            state.stopping = true
            return state.links.compactMap { $0 }
        }
        for link in links { link.drop() }
    }
}
