import Logging
import RedisClient
import StatusCore
import Synchronization
import Testing

@testable import StatusServer

/// Calls that find an app's cached copy stale while it is being read again do not read it too (``SingleFlight``): a
/// reconnect storm costs Redis one read of the app per half second, not one per connect that came during the read. A
/// copy stale by less than ``AppRegistry/servedWhileReading`` serves them meanwhile; an older one makes them wait for
/// the read.
@Suite struct AppReadCoalescingTests {
    /// Redis is paused while fifty lookups of a stale app start, so every one of them comes while the first read is
    /// on the wire: one `HMGET` reaches Redis, and all fifty get the app.
    @Test(.redis) func lookupsDuringARereadShareIt() async throws {
        try await Self.withStaleApp { server, registry, appId, _ in
            server.pause()
            let found = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<50 {
                    group.addTask { try await registry.find(appId)?.appId }
                }
                // Every lookup starts while Redis cannot answer the first read.
                try await Task.sleep(for: .milliseconds(300))
                server.resume()
                return try await group.reduce(into: [String?]()) { $0.append($1) }
            }
            #expect(found == Array(repeating: appId, count: 50))
        } reads: { reads in
            #expect(reads == 1, "uncoalesced: one read per lookup, 50")
        }
    }

    /// While a read is on the wire (Redis paused), a lookup with the copy just stale is answered from it at once, and
    /// one with the copy stale past ``AppRegistry/servedWhileReading`` waits for the read: it is answered only once
    /// Redis is, and Redis saw one read.
    ///
    /// The client waits 60 s for a reply here: a lookup that waited for the read instead of being served would be
    /// answered only by the read's timeout (from the stale copy, ``AppRegistry``'s partition rule), which the bound of
    /// 10 s tells apart.
    @Test(.redis) func aJustStaleCopyServesWhileTheAppIsReadAndAnOlderOneWaits() async throws {
        try await Self.withStaleApp(commandTimeout: .seconds(60)) { server, registry, appId, clock in
            server.pause()
            let resumed = ReadCount()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    let found = try await registry.find(appId)?.appId
                    #expect(found == appId)
                }
                // The first lookup's read is on the wire (Redis cannot answer it).
                while !registry.isBeingRead(appId) { await Task.yield() }
                let asked = ContinuousClock.now
                #expect(try await registry.find(appId)?.appId == appId)
                #expect(ContinuousClock.now - asked < .seconds(10), "served from the copy while Redis is paused")
                clock.advance(by: AppRegistry.servedWhileReading)
                group.addTask {
                    let found = try await registry.find(appId)?.appId
                    #expect(found == appId)
                    #expect(resumed.count.load(ordering: .relaxed) == 1, "answered only once Redis answered")
                }
                try await Task.sleep(for: .milliseconds(200))
                resumed.count.store(1, ordering: .relaxed)
                server.resume()
                try await group.waitForAll()
            }
        } reads: { reads in
            #expect(reads == 1)
        }
    }

    /// Runs `body` with an app cached by a registry of its own on a private Redis, its copy just gone stale (the
    /// registry's clock is manual), then `reads` with how many times the app was read from Redis meanwhile.
    static func withStaleApp(
        commandTimeout: Duration? = nil,
        _ body: (PrivateRedis, AppRegistry, String, ManualNodeClock) async throws -> Void,
        reads: (Int) -> Void
    ) async throws {
        try await withPrivateRedis { server in
            var configuration = server.configuration
            if let commandTimeout { configuration.commandTimeout = commandTimeout }
            let redis = RedisClient(configuration: configuration, logger: Logger(label: "app-reads"))
            let clock = ManualNodeClock()
            let registry = AppRegistry(redis: redis, scripts: try ScriptLibrary.load(), clock: clock)
            let appId = try await registry.create(appId: "stale", config: AppConfig()).record.appId
            clock.advance(by: AppRegistry.cacheTTL + .milliseconds(1))
            let before = try await UnknownAppCacheTests.lookups(redis)
            try await body(server, registry, appId, clock)
            reads(try await UnknownAppCacheTests.lookups(redis) - before)
            await redis.close()
        }
    }

    @Test func waitersGetTheReadersValueAndTheReadRunsOnce() async throws {
        let flight = SingleFlight<Int>()
        let reads = ReadCount()
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let results = try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                try await flight.run("k") {
                    reads.count.add(1, ordering: .relaxed)
                    for await _ in gate { break }
                    return 7
                }
            }
            while flight.inFlight == 0 { await Task.yield() }
            for _ in 0..<20 {
                group.addTask { try await flight.run("k") { reads.count.add(1, ordering: .relaxed).newValue + 100 } }
            }
            // The twenty are filed as waiters before the read ends (a waiter filed late would read on its own).
            try await Task.sleep(for: .milliseconds(100))
            open.yield()
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(results == Array(repeating: 7, count: 21))
        #expect(reads.count.load(ordering: .relaxed) == 1)
        #expect(flight.inFlight == 0)
        // Nothing is kept: the next call reads again.
        #expect(try await flight.run("k") { 8 } == 8)
    }

    @Test func aFailedReadFailsItsWaitersAndOtherKeysReadOnTheirOwn() async throws {
        struct Broken: Error {}
        let flight = SingleFlight<Int>()
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let outcomes = await withTaskGroup(of: String.self) { group in
            group.addTask {
                do {
                    return String(
                        try await flight.run("a") {
                            for await _ in gate { break }
                            throw Broken()
                        }
                    )
                } catch { return "\(error)" }
            }
            while flight.inFlight == 0 { await Task.yield() }
            group.addTask { (try? await flight.run("a") { 1 }).map(String.init) ?? "failed" }
            group.addTask { (try? await flight.run("b") { 2 }).map(String.init) ?? "failed" }
            try? await Task.sleep(for: .milliseconds(100))
            open.yield()
            return await group.reduce(into: [String]()) { $0.append($1) }.sorted()
        }
        #expect(outcomes == ["2", "Broken()", "failed"])
    }
}

/// How many times a read ran, shared by the tasks of a test.
private final class ReadCount: Sendable {
    let count = Atomic(0)
}
