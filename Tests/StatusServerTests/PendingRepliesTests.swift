import Foundation
import Testing

@testable import StatusdClient

/// The device's table of requests waiting for their replies: a reply may come before its requester waits, a closed
/// connection fails every waiting request, and a late reply finds nobody.
@Suite struct PendingRepliesTests {
    @Test func aReplyThatCameFirstIsKeptForItsRequester() async throws {
        let replies = PendingReplies()
        replies.expect("1")
        #expect(replies.deliver("1", Data("one".utf8)) == false, "nobody waits yet: the reply is kept")
        #expect(try await replies.reply(to: "1") == Data("one".utf8))
        #expect(replies.deliver("1", Data("again".utf8)) == false, "the slot is gone once answered")
    }

    @Test func aClosedConnectionFailsEveryWaitingRequest() async throws {
        let replies = PendingReplies()
        replies.expect("1")
        replies.expect("2")
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                let error = await #expect(throws: StatusdError.self) { try await replies.reply(to: "1") }
                #expect(error?.code == .disconnected)
            }
            try await Task.sleep(for: .milliseconds(50))
            replies.failAll(StatusdError(code: .disconnected, message: "closed"))
            try await group.waitForAll()
        }
        let error = await #expect(throws: StatusdError.self) { try await replies.reply(to: "2") }
        #expect(error?.code == .disconnected, "a request that had not started waiting fails too")
    }

    @Test func aCancelledWaitLeavesNoSlot() async throws {
        let replies = PendingReplies()
        replies.expect("1")
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await #expect(throws: CancellationError.self) { try await replies.reply(to: "1") }
            }
            try? await Task.sleep(for: .milliseconds(50))
            group.cancelAll()
        }
        #expect(replies.deliver("1", Data()) == false)
    }
}
