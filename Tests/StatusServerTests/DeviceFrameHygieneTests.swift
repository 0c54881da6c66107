import Foundation
import NIOCore
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §7 replies on the device socket: a reply to a frame whose `id` can be read carries that `id`, whatever else is
/// wrong with the frame; objects and arrays are held to one depth rule.
@Suite(.redis) struct DeviceFrameHygieneTests {
    @Test func theIdIsReadFromFramesThatDoNotParse() {
        func peek(_ text: String) -> JSONValue? { RequestIdPeek.id(in: Array(text.utf8)) }
        #expect(peek(#"{"id":"7","op":"getUserStatus","userIds":[1,2"#) == "7")
        #expect(peek(#" { "op" : "x" , "n": {"id": "inner"}, "id" : "outer" , "bad": tru }"#) == "outer")
        #expect(peek(#"{"op":"x","list":["a,b}",{"c":[1,2]}],"id":42,"#) == 42)
        #expect(peek(#"{"id":-3}"#) == -3)
        #expect(peek(#"{"x":"\"id\":\"no\"","id":"yes"}"#) == "yes")
        #expect(peek(#"{"op":"x"}"#) == nil)
        #expect(peek(#"{"id":"has \"escape\""}"#) == nil)
        #expect(peek(#"["id","7"]"#) == nil)
        #expect(peek(#"{"op":"x" "id":"7"}"#) == nil)
        #expect(peek("") == nil)
    }

    @Test func malformedFramesAreAnsweredWithTheirIdAndObjectsAndArraysShareOneDepthRule() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "a1")) { device, _ in
                try await device.sendRaw(#"{"id":"broken","op":"getUserStatus","userIds":["alice"#)
                let broken = try await device.next { $0["id"] == "broken" }
                #expect(broken["error"]["code"] == "INVALID_REQUEST")
                // The frame is level 1: 63 more levels pass the depth rule (the frame is then refused for its unknown
                // field), 64 more are refused for their depth, for arrays and objects alike, each with its id.
                for (name, open, close) in [("array", "[", "]"), ("object", #"{"a":"#, "}")] {
                    for (extra, refusal) in [(63, "unknown field"), (64, "nested deeper")] {
                        let id = "\(name)-\(extra)"
                        let value = String(repeating: open, count: extra) + "1" + String(repeating: close, count: extra)
                        try await device.sendRaw(#"{"id":"\#(id)","op":"heartbeat","x":\#(value)}"#)
                        let reply = try await device.next { $0["id"].string == id }
                        #expect(reply["error"]["message"].string?.contains(refusal) == true, "\(id): \(reply)")
                    }
                }
            }
        }
    }

    /// RFC 6455 §7.4 on a real socket: a close frame with a code that may not be sent is answered 1002, one whose
    /// reason is not UTF-8 1007, a valid one with its own code.
    @Test func closeFramesAreAnsweredByTheirValidity() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let token = try await app.token(for: "alice")
            for (index, (payload, answer)) in [
                ([0x03, 0xE7], 1002), ([0x03, 0xED], 1002), ([0x03], 1002), ([0x03, 0xE8, 0xC3], 1007), ([0x0F, 0xA0], 4000),
            ]
            .enumerated() {
                let socket = try RawWebSocket(port: api.client.port!, path: "/v1/connect?deviceId=c\(index)&platform=web", token: token)
                try await app.waitUntilConnected("alice", deviceId: "c\(index)")
                let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
                let bytes: [UInt8] = payload.map(UInt8.init)
                try socket.send([0x88, 0x80 | UInt8(bytes.count)] + mask + bytes.enumerated().map { $0.element ^ mask[$0.offset % 4] })
                let received = try await socket.readUntilClosed(timeout: .seconds(3))
                #expect(LivenessTests.closeCode(in: received) == UInt16(answer), "close payload \(payload)")
            }
        }
    }
}
