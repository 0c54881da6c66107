import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §7 "a refused request changes nothing", for what the fuzz stage (`scripts/fuzz`) found: routes that take no
/// body acted before their (malformed) body had arrived, bodyless routes ignored garbage bodies, and bytes pipelined
/// after a request got a 400 read as that request's answer.
@Suite(.redis) struct RefusedRequestsChangeNothingTests {
    @Test func aDeleteWithAMalformedChunkedBodyDeletesNothing() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            try await app.createUsers(["zed"])
            let port = api.client.port!
            let request =
                "DELETE /v1/apps/\(app.appId)/users/zed HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(app.apiKey)\r\n"
                + "Transfer-Encoding: chunked\r\n\r\nzz\r\n"
            let response = try await RawHTTP.exchange(port: port, request, timeout: .seconds(3))
            #expect(response.status == 400)
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await app.call(.get, "/users/zed").status == 200, "the refused delete deleted the user")
            // A body announced and never sent: nothing happens before the request is whole.
            let connection = try RawConnection(port: port)
            _ = connection.send(
                "DELETE /v1/apps/\(app.appId)/users/zed HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(app.apiKey)\r\nContent-Length: 5\r\n\r\n"
            )
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await app.call(.get, "/users/zed").status == 200, "a delete ran before its request arrived")
        }
    }

    @Test func routesWithoutABodyRefuseAnyButAnEmptyObject() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["bob"])
            expectOK(try await app.login("bob", "phone-1"))
            let base = "/v1/apps/\(app.appId)/users/bob/devices/phone-1"
            for body in ["1.5", #"{"Detail": null}"#, "garbage", "[]"] {
                expectError(try await app.raw(.post, base + "/heartbeat", key: app.apiKey, body: body), 400, "INVALID_REQUEST")
                expectError(try await app.raw(.post, base + "/logout", key: app.apiKey, body: body), 400, "INVALID_REQUEST")
            }
            #expect(try await app.backendStatus("bob")["statusType"] == "online")
            expectOK(try await app.raw(.post, base + "/heartbeat", key: app.apiKey, body: "{}"))
            expectOK(try await app.raw(.post, base + "/logout", key: app.apiKey, body: " { } "))
            expectError(try await app.raw(.delete, "/v1/apps/\(app.appId)/users/bob", key: app.apiKey, body: #"{"x":1}"#), 400, "INVALID_REQUEST")
            expectError(try await api.raw(.delete, "/v1/apps/\(app.appId)", key: api.adminKey, body: "nope"), 400, "INVALID_REQUEST")
            #expect(try await app.call(.get, "/users/bob").status == 200)
        }
    }

    @Test func bytesPipelinedAfterARequestAreNotAnsweredAsIfThatRequestWasRefused() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            let port = api.client.port!
            let response = try await RawHTTP.exchange(
                port: port,
                "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\nxyz\r\n\r\n",
                timeout: .seconds(3)
            )
            // The health check is answered 200, then the connection closes: never a 400 in its place.
            #expect(response.statuses == [200], "\(response.text)")
            #expect(response.closed)
            _ = app
        }
    }

    @Test func aFrameRefusedForANumberPastADoubleOrALongIdKeepsItsId() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "a1")) { device, _ in
                try await device.sendRaw(#"{"id": "a4", "op": "heartbeat", "x": 1e400}"#)
                #expect(try await device.next { $0["id"] == "a4" }["ok"] == false)
                let long = String(repeating: "i", count: 5_000)
                try await device.sendRaw(#"{"id": "\#(long)", "op": "heartbeat",}"#)
                #expect(try await device.next { $0["id"].string == long }["ok"] == false)
            }
        }
    }
}
