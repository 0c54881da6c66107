import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §7 friends and blocks endpoints.
@Suite(.redis) struct RelationsTests {
    @Test func friendshipsAreMutual() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice", "bob", "carol", "dave"])
            let added = try await app.call(.put, "/users/alice/friends", ["userIds": ["carol", "bob", "carol"]])
            #expect(added.status == 200)
            #expect(Set(added.body["userIds"].strings) == ["bob", "carol"])
            #expect(Set(try await app.call(.get, "/users/alice/friends").body["userIds"].strings) == ["bob", "carol"])
            #expect(try await app.call(.get, "/users/bob/friends").body["userIds"].strings == ["alice"])
            #expect(try await app.call(.get, "/users/carol/friends").body["userIds"].strings == ["alice"])
            #expect(try await app.call(.get, "/users/dave/friends").body["userIds"].strings.isEmpty)
            // Adding again is harmless.
            #expect(Set(try await app.call(.put, "/users/bob/friends", ["userIds": ["alice"]]).body["userIds"].strings) == ["alice"])

            let removed = try await app.call(.delete, "/users/bob/friends", ["userIds": ["alice"]])
            #expect(removed.status == 200)
            #expect(removed.body["userIds"].strings.isEmpty)
            #expect(try await app.call(.get, "/users/alice/friends").body["userIds"].strings == ["carol"])
        }
    }

    @Test func friendsNeedExistingUsersAndValidIds() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice", "bob"])
            expectError(try await app.call(.put, "/users/alice/friends", ["userIds": ["bob", "ghost"]]), 404, "USER_NOT_FOUND")
            #expect(try await app.call(.get, "/users/alice/friends").body["userIds"].strings.isEmpty)
            #expect(try await app.call(.get, "/users/bob/friends").body["userIds"].strings.isEmpty)
            expectError(try await app.call(.put, "/users/alice/friends", ["userIds": ["bob", "no way"]]), 400, "INVALID_USER_ID")
            expectError(try await app.call(.put, "/users/alice/friends", ["userIds": []]), 400, "INVALID_REQUEST")
            expectError(try await app.call(.put, "/users/alice/friends", [:]), 400, "INVALID_REQUEST")
            expectError(try await app.call(.put, "/users/alice/friends", ["userIds": [1]]), 400, "INVALID_REQUEST")
        }
    }

    @Test func blocksAreListedByDirection() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice", "bob", "carol"])
            let added = try await app.call(.put, "/users/alice/blocks", ["userIds": ["bob"]])
            #expect(added.status == 200)
            #expect(added.body == ["byMe": ["bob"], "me": []])
            #expect(try await app.call(.put, "/users/carol/blocks", ["userIds": ["alice"]]).status == 200)

            #expect(try await app.call(.get, "/users/alice/blocks").body == ["byMe": ["bob"], "me": ["carol"]])
            #expect(try await app.call(.get, "/users/alice/blocks?direction=both").body == ["byMe": ["bob"], "me": ["carol"]])
            #expect(try await app.call(.get, "/users/alice/blocks?direction=byMe").body == ["byMe": ["bob"]])
            #expect(try await app.call(.get, "/users/alice/blocks?direction=me").body == ["me": ["carol"]])
            #expect(try await app.call(.get, "/users/bob/blocks").body == ["byMe": [], "me": ["alice"]])
            expectError(try await app.call(.get, "/users/alice/blocks?direction=sideways"), 400, "INVALID_REQUEST")

            let removed = try await app.call(.delete, "/users/alice/blocks", ["userIds": ["bob"]])
            #expect(removed.status == 200)
            #expect(removed.body["byMe"].strings.isEmpty)
            #expect(try await app.call(.get, "/users/bob/blocks").body == ["byMe": [], "me": []])
        }
    }

    @Test func blocksNeedExistingUsers() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice", "bob"])
            expectError(try await app.call(.put, "/users/alice/blocks", ["userIds": ["bob", "ghost"]]), 404, "USER_NOT_FOUND")
            #expect(try await app.call(.get, "/users/alice/blocks").body == ["byMe": [], "me": []])
            expectError(try await app.call(.put, "/users/alice/blocks", ["userIds": ["bad/id"]]), 400, "INVALID_USER_ID")
        }
    }

    @Test func deletingAUserRemovesTheirRelations() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice", "bob", "carol"])
            #expect(try await app.call(.put, "/users/alice/friends", ["userIds": ["bob"]]).status == 200)
            #expect(try await app.call(.put, "/users/bob/blocks", ["userIds": ["carol"]]).status == 200)
            #expect(try await app.call(.put, "/users/carol/blocks", ["userIds": ["bob"]]).status == 200)
            #expect(try await app.call(.delete, "/users/bob").status == 204)
            #expect(try await app.call(.get, "/users/alice/friends").body["userIds"].strings.isEmpty)
            #expect(try await app.call(.get, "/users/carol/blocks").body == ["byMe": [], "me": []])
        }
    }
}
