import RedisClient
import Testing

@Suite("RESP codec (hiredis)")
struct RedisCodecTests {
    private func bytes(_ text: String) -> [UInt8] {
        Array(text.utf8)
    }

    private func decodeAll(_ text: String) throws -> [RedisValue] {
        let decoder = RedisReplyDecoder()
        decoder.feed(self.bytes(text))
        var values: [RedisValue] = []
        while let value = try decoder.next() {
            values.append(value)
        }
        return values
    }

    @Test func encodesArgvAsArrayOfBulkStrings() {
        #expect(RedisCommandEncoder.encode(["SET", "key", "value"]) == self.bytes("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n"))
        #expect(RedisCommandEncoder.encode(["PING"]) == self.bytes("*1\r\n$4\r\nPING\r\n"))
    }

    @Test func encodesEmptyBinaryAndMultiByteArguments() {
        let encoded = RedisCommandEncoder.encode(["ECHO", "", "é", "a\r\nb"])
        #expect(encoded == self.bytes("*4\r\n$4\r\nECHO\r\n$0\r\n\r\n$2\r\né\r\n$4\r\na\r\nb\r\n"))
    }

    @Test(
        arguments: [
            ("+OK\r\n", RedisValue.simpleString("OK")),
            ("-ERR unknown command\r\n", .error("ERR unknown command")),
            (":42\r\n", .integer(42)),
            (":-9223372036854775808\r\n", .integer(.min)),
            ("$5\r\nhello\r\n", .bulkString(Array("hello".utf8))),
            ("$0\r\n\r\n", .bulkString([])),
            ("$-1\r\n", .null),
            ("*-1\r\n", .null),
            ("*0\r\n", .array([])),
            ("*3\r\n:1\r\n$1\r\na\r\n+b\r\n", .array([.integer(1), .bulkString([97]), .simpleString("b")])),
        ]
    )
    func decodesEachReplyType(wire: String, expected: RedisValue) throws {
        #expect(try self.decodeAll(wire) == [expected])
    }

    @Test func decodesNestedArraysWithNulls() throws {
        let wire = "*3\r\n*2\r\n:1\r\n*1\r\n$-1\r\n*-1\r\n*2\r\n-ERR inner\r\n$3\r\nxyz\r\n"
        let expected = RedisValue.array([
            .array([.integer(1), .array([.null])]),
            .null,
            .array([.error("ERR inner"), .bulkString(Array("xyz".utf8))]),
        ])
        #expect(try self.decodeAll(wire) == [expected])
    }

    @Test func decodesBinaryBulkStrings() throws {
        let payload: [UInt8] = [0, 13, 10, 255, 36, 42]
        let decoder = RedisReplyDecoder()
        decoder.feed(self.bytes("$6\r\n") + payload + self.bytes("\r\n"))
        #expect(try decoder.next() == .bulkString(payload))
        #expect(try decoder.next() == nil)
    }

    @Test func decodesAReplySplitByteByByte() throws {
        let wire = self.bytes("*2\r\n$11\r\nhello world\r\n*2\r\n:7\r\n+OK\r\n")
        let decoder = RedisReplyDecoder()
        for byte in wire.dropLast() {
            decoder.feed([byte])
            #expect(try decoder.next() == nil)
        }
        decoder.feed([wire.last!])
        #expect(try decoder.next() == .array([.bulkString(Array("hello world".utf8)), .array([.integer(7), .simpleString("OK")])]))
        #expect(try decoder.next() == nil)
    }

    @Test func decodesManyRepliesFromOneFeed() throws {
        var wire = ""
        for index in 0..<1000 {
            wire += index.isMultiple(of: 2) ? ":\(index)\r\n" : "$\(String(index).utf8.count)\r\n\(index)\r\n"
        }
        let values = try self.decodeAll(wire)
        #expect(values.count == 1000)
        #expect(values.map { $0.int } == (0..<1000).map { Int64($0) })
    }

    @Test func keepsAPartialReplyUntilTheRestArrives() throws {
        let decoder = RedisReplyDecoder()
        decoder.feed(self.bytes("+first\r\n$10\r\n01234"))
        #expect(try decoder.next() == .simpleString("first"))
        #expect(try decoder.next() == nil)
        decoder.feed(self.bytes("56789\r\n"))
        #expect(try decoder.next() == .bulkString(Array("0123456789".utf8)))
    }

    @Test func reportsAProtocolError() throws {
        let decoder = RedisReplyDecoder()
        decoder.feed(self.bytes("?what\r\n"))
        let error = try #require(throws: RedisClientError.self) { try decoder.next() }
        #expect(error.kind == .protocolError)
        #expect(!error.message.isEmpty)
        // The reader stays in its error state.
        decoder.feed(self.bytes("+OK\r\n"))
        #expect(throws: RedisClientError.self) { try decoder.next() }
    }

    @Test func reportsABadLength() throws {
        let decoder = RedisReplyDecoder()
        decoder.feed(self.bytes("$abc\r\n"))
        #expect(throws: RedisClientError.self) { try decoder.next() }
    }
}
