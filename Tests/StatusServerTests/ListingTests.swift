import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §4 listing users by presence: `GET /users?status=online|offline&limit=&cursor=`.
@Suite(.redis) struct ListingTests {
    /// Every page of a listing, following cursors.
    static func allPages(_ app: APIClient, status: String, limit: Int) async throws -> (users: [JSONValue], pages: Int) {
        var users: [JSONValue] = []
        var cursor: String?
        var pages = 0
        repeat {
            var path = "/users?status=\(status)&limit=\(limit)"
            if let cursor { path += "&cursor=\(cursor)" }
            let response = try await app.call(.get, path)
            #expect(response.status == 200, "\(response.body)")
            #expect(response.body.has("cursor"))
            #expect(response.body["users"].array.count <= limit)
            users += response.body["users"].array
            cursor = response.body["cursor"].string
            pages += 1
        } while cursor != nil && pages < 100
        return (users, pages)
    }

    @Test func limitOutside1To100IsInvalidLimit() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            for limit in ["0", "101", "-1", "abc", "1000"] {
                expectError(try await app.call(.get, "/users?status=online&limit=\(limit)"), 400, "INVALID_LIMIT")
                expectError(try await app.call(.get, "/users?status=offline&limit=\(limit)"), 400, "INVALID_LIMIT")
            }
            #expect(try await app.call(.get, "/users?status=online&limit=1").status == 200)
            #expect(try await app.call(.get, "/users?status=online&limit=100").status == 200)
            expectError(try await app.call(.get, "/users?status=away"), 400, "INVALID_REQUEST")
        }
    }

    @Test func paginationVisitsEveryUserOnce() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            let users = (0..<23).map { String(format: "user%02d", $0) }
            try await app.createUsers(users)
            let online = Set(users.enumerated().filter { $0.offset % 3 == 0 }.map(\.element))
            for user in online {
                #expect(try await app.login(user, "d1").status == 200)
            }
            // A user who came and went is not online.
            #expect(try await app.login("user01", "d1").status == 200)
            #expect(try await app.logout("user01", "d1").status == 200)

            for limit in [1, 2, 5, 100] {
                let onlinePages = try await Self.allPages(app, status: "online", limit: limit)
                let onlineIds = onlinePages.users.compactMap { $0["userId"].string }
                #expect(onlineIds.count == online.count, "limit \(limit)")
                #expect(Set(onlineIds) == online, "limit \(limit)")
                #expect(onlinePages.users.allSatisfy { $0["statusType"].string == "online" })
                if limit == 1 { #expect(onlinePages.pages >= online.count) }

                let offlinePages = try await Self.allPages(app, status: "offline", limit: limit)
                let offlineIds = offlinePages.users.compactMap { $0["userId"].string }
                #expect(offlineIds.count == users.count - online.count, "limit \(limit)")
                #expect(Set(offlineIds) == Set(users).subtracting(online), "limit \(limit)")
                #expect(offlinePages.users.allSatisfy { $0["statusType"].string != "online" })
                #expect(offlineIds.contains("user01"))
            }
        }
    }

    /// SPEC §10.7: one page does bounded work whatever the app's size. With 400 users online and one offline (the last
    /// in id order), an `offline` listing of `limit=1` reads at most ``StatusOperations/listingBudget(limit:)`` statuses
    /// per page (counted by Redis itself: `HMGET` calls in `INFO commandstats`), answering empty pages with a cursor until
    /// it reaches the offline user.
    @Test func aPageReadsABoundedNumberOfUsers() async throws {
        // Counted on a server of the test's own: the shared one counts every test running meanwhile.
        let server = try await PrivateRedis.start()
        defer { server.stop() }
        try await withStatusd(configure: server.install) { api in
            let app = try await api.createApp()
            let online = (0..<400).map { String(format: "on%03d", $0) }
            try await app.createUsers(online + ["zz-offline"])
            for user in online { _ = expectOK(try await app.login(user, "d1")) }
            try await server.withClient("probe") { redis in
                @Sendable func hmgets() async throws -> Int {
                    let info = try await redis.send("INFO", "commandstats").string ?? ""
                    let line = info.split(separator: "\r\n").first { $0.hasPrefix("cmdstat_hmget:") } ?? ""
                    return Int(line.split(separator: "=")[1].split(separator: ",")[0]) ?? 0
                }
                var cursor: String?
                var found: [String] = []
                var pages = 0
                repeat {
                    let before = try await hmgets()
                    let response = try await app.call(.get, "/users?status=offline&limit=1" + (cursor.map { "&cursor=\($0)" } ?? ""))
                    let reads = try await hmgets() - before
                    // Redis is shared with whatever else runs (other tests' housekeeping): a margin, far below the 401
                    // reads an unbounded page makes here.
                    #expect(reads <= StatusOperations.listingBudget(limit: 1) * 3 / 2, "page \(pages) read \(reads) statuses")
                    found += response.body["users"].array.compactMap { $0["userId"].string }
                    cursor = response.body["cursor"].string
                    pages += 1
                } while cursor != nil && pages < 20
                #expect(found == ["zz-offline"])
                #expect(pages >= 4)
            }
        }
    }

    @Test func emptyAppListsNothing() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            let online = try await app.call(.get, "/users?status=online")
            #expect(online.status == 200)
            #expect(online.body["users"].array.isEmpty)
            #expect(online.body["cursor"].isNull)
        }
    }

    @Test func entriesCarryStatusAndProfile() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            let profile: JSONValue = ["name": "Alice", "role": "admin", "tags": ["vip", "beta"], "metadata": ["team": "blue"]]
            #expect(try await app.call(.put, "/users/alice", profile).status == 200)
            #expect(try await app.call(.put, "/users/bob", ["name": "Bob", "role": "member"]).status == 200)
            #expect(try await app.login("alice", "phone", platform: "android").status == 200)
            #expect(try await app.setStatus("alice", "coding").status == 200)

            let online = try await app.call(.get, "/users?status=online&limit=10")
            let alice = online.body["users"][0]
            #expect(online.body["users"].array.count == 1)
            #expect(alice["userId"].string == "alice")
            #expect(alice["statusType"].string == "online")
            #expect(alice["customStatus"].string == "coding")
            #expect(alice["version"].int == 2)
            #expect(alice["lastActiveAt"].int != nil)
            #expect(alice["name"].string == "Alice")
            #expect(alice["role"].string == "admin")
            #expect(alice["tags"].strings == ["vip", "beta"])
            #expect(alice["metadata"] == ["team": "blue"])

            let offline = try await app.call(.get, "/users?status=offline&limit=10")
            #expect(offline.body["users"].array.count == 1)
            let bob = offline.body["users"][0]
            #expect(bob["userId"].string == "bob")
            #expect(bob["statusType"].string == "unlogined")
            #expect(bob["name"].string == "Bob")
            #expect(bob["role"].string == "member")
        }
    }

    @Test func listingFollowsChanges() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice", "bob"])
            #expect(try await app.login("alice", "d1").status == 200)
            #expect(try await app.call(.get, "/users?status=online").body["users"].array.map { $0["userId"].string } == ["alice"])
            #expect(try await app.call(.post, "/users/alice/kick").status == 200)
            #expect(try await app.call(.get, "/users?status=online").body["users"].array.isEmpty)
            #expect(try await app.call(.get, "/users?status=offline").body["users"].array.count == 2)
        }
    }
}
