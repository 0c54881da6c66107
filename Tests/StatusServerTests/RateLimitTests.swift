import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §5: a sliding window per (app, user, operation).
@Suite(.redis) struct RateLimitTests {
    static func config(calls: Int64, windowSeconds: Int64) -> JSONValue {
        ["plan": "premium", "statusQuery": true, "rateLimit": ["calls": .int(calls), "windowSeconds": .int(windowSeconds)]]
    }

    @Test func rejectionCarriesRetryAfter() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: Self.config(calls: 3, windowSeconds: 60))
            try await app.createUsers(["alice", "bob"])
            for _ in 0..<3 {
                #expect(try await app.query("alice", ["bob"]).status == 200)
            }
            let limited = try await app.query("alice", ["bob"])
            expectError(limited, 429, "RATE_LIMITED")
            let retryAfterMs = try #require(limited.body["error"]["retryAfterMs"].int)
            #expect(retryAfterMs > 55_000 && retryAfterMs <= 60_000)
            let header = try #require(limited.headers[.retryAfter])
            #expect(Int64(header) == (retryAfterMs + 999) / 1000)
        }
    }

    @Test func defaultIs20CallsPer5Seconds() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            for _ in 0..<20 {
                #expect(try await app.query("alice", ["bob"]).status == 200)
            }
            let limited = try await app.query("alice", ["bob"])
            expectError(limited, 429, "RATE_LIMITED")
            let retryAfterMs = try #require(limited.body["error"]["retryAfterMs"].int)
            #expect(retryAfterMs > 0 && retryAfterMs <= 5000)
            #expect(limited.headers[.retryAfter].flatMap { Int($0) }.map { (1...5).contains($0) } == true)
        }
    }

    @Test func countersArePerUserAndPerOperation() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: Self.config(calls: 2, windowSeconds: 60))
            try await app.createUsers(["alice", "bob", "carol"])
            for _ in 0..<2 {
                #expect(try await app.query("alice", ["bob"]).status == 200)
            }
            expectError(try await app.query("alice", ["bob"]), 429, "RATE_LIMITED")
            // Another operation of the same user has its own counter.
            for _ in 0..<2 {
                #expect(try await app.subscribe("alice", ["bob"]).status == 200)
            }
            expectError(try await app.subscribe("alice", ["carol"]), 429, "RATE_LIMITED")
            for _ in 0..<2 {
                #expect(try await app.unsubscribe("alice", ["bob"]).status == 200)
            }
            expectError(try await app.unsubscribe("alice", nil), 429, "RATE_LIMITED")
            // Another user has their own counters.
            for _ in 0..<2 {
                #expect(try await app.query("bob", ["alice"]).status == 200)
                #expect(try await app.subscribe("bob", ["alice"]).status == 200)
                #expect(try await app.unsubscribe("bob", ["alice"]).status == 200)
            }
            // setSelfStatus and self queries are never limited.
            for index in 0..<10 {
                #expect(try await app.setStatus("alice", "s\(index)").status == 200)
                #expect(try await app.query("alice", ["alice"]).status == 200)
            }
            // A rejected subscribe changed nothing.
            #expect(try await app.subscriptions("alice").isEmpty)
        }
    }

    @Test func countersArePerApp() async throws {
        try await withStatusd { api in
            let first = try await api.createApp(config: Self.config(calls: 1, windowSeconds: 60))
            let second = try await api.createApp(config: Self.config(calls: 1, windowSeconds: 60))
            for app in [first, second] { try await app.createUsers(["alice", "bob"]) }
            #expect(try await first.query("alice", ["bob"]).status == 200)
            expectError(try await first.query("alice", ["bob"]), 429, "RATE_LIMITED")
            #expect(try await second.query("alice", ["bob"]).status == 200)
        }
    }

    @Test func windowSlidesAndRejectedCallsAreNotCounted() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: Self.config(calls: 3, windowSeconds: 2))
            try await app.createUsers(["alice", "bob"])
            let clock = ContinuousClock()
            let start = clock.now
            func elapsedMs() -> Int64 { Int64((clock.now - start) / .milliseconds(1)) }
            #expect(try await app.query("alice", ["bob"]).status == 200)
            let firstDone = elapsedMs()
            try await Task.sleep(for: .milliseconds(1000))
            let secondSent = elapsedMs()
            #expect(try await app.query("alice", ["bob"]).status == 200)
            #expect(try await app.query("alice", ["bob"]).status == 200)
            let thirdDone = elapsedMs()
            // Several rejections: none of them may count. Each outcome below is asserted only while the times measured
            // here decide it (the server's stamp of a call lies between its send and its answer): a machine that stalls
            // for most of a second lets the window move, and the test then checks what it can instead of failing.
            for _ in 0..<5 {
                let sent = elapsedMs()
                let limited = try await app.query("alice", ["bob"])
                let done = elapsedMs()
                // Answered after the oldest call may have left the window: it may have been accepted, and counted.
                guard done < 2000 - 50 else { return }
                expectError(limited, 429, "RATE_LIMITED")
                let retryAfterMs = limited.body["error"]["retryAfterMs"].int ?? 0
                // The oldest call leaves the window 2 s after it was made, not when some fixed bucket ends.
                #expect(retryAfterMs >= 2000 - done - 50 && retryAfterMs <= firstDone + 2000 - sent + 50, "\(retryAfterMs) ms")
            }
            try await Task.sleep(for: .milliseconds(max(0, firstDone + 2000 + 100 - elapsedMs())))
            // The oldest call has left: a slot is free whatever the machine did meanwhile.
            #expect(try await app.query("alice", ["bob"]).status == 200)
            let sent = elapsedMs()
            let again = try await app.query("alice", ["bob"])
            let done = elapsedMs()
            // Exactly one slot came free while the two later calls are still in the window (until 2 s after them).
            guard done < secondSent + 2000 - 50 else { return }
            expectError(again, 429, "RATE_LIMITED")
            let secondRetry = try #require(again.body["error"]["retryAfterMs"].int)
            #expect(secondRetry >= secondSent + 2000 - done - 50 && secondRetry <= thirdDone + 2000 - sent + 50, "\(secondRetry) ms")
            #expect(again.headers[.retryAfter] == String((secondRetry + 999) / 1000))
        }
    }
}
