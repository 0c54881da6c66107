import CHiredis
import RedisClient
import Testing

/// The command encoder writes RESP itself; hiredis's `redisFormatCommandArgv` is the reference it must match byte for
/// byte, over generated arguments of every shape a command can carry.
@Suite("Command encoding matches hiredis")
struct RedisCommandEncoderTests {
    /// What hiredis makes of `arguments`.
    private func hiredisFormatted(_ arguments: [String]) -> [UInt8] {
        let storage = arguments.map { Array($0.utf8) + [0] }
        var lengths = arguments.map { $0.utf8.count }
        var pointers: [UnsafeMutablePointer<CChar>?] = storage.map { bytes in
            let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count)
            bytes.withUnsafeBufferPointer { source in
                source.withMemoryRebound(to: CChar.self) { pointer.initialize(from: $0.baseAddress!, count: bytes.count) }
            }
            return pointer
        }
        defer {
            for pointer in pointers { pointer?.deallocate() }
        }
        var target: UnsafeMutablePointer<CChar>?
        let length = pointers.withUnsafeMutableBufferPointer { argv in
            argv.withMemoryRebound(to: UnsafePointer<CChar>?.self) { argv in
                redisFormatCommandArgv(&target, Int32(arguments.count), argv.baseAddress, &lengths)
            }
        }
        guard length >= 0, let target else { return [] }
        defer { redisFreeCommand(target) }
        return Array(UnsafeRawBufferPointer(start: target, count: Int(length)))
    }

    @Test func matchesHiredisOnChosenArguments() {
        let cases: [[String]] = [
            ["PING"],
            ["SET", "key", "value"],
            ["ECHO", "", "é", "a\r\nb", "😀", "\0"],
            ["HMGET", "s:{app:user}", "t", "cs", "la", "v", "vt"],
            ["SET", "k", String(repeating: "x", count: 9)],
            ["SET", "k", String(repeating: "x", count: 10)],
            ["SET", "k", String(repeating: "y", count: 99_999)],
            ["SET", "k", String(repeating: "z", count: 100_000)],
            Array(repeating: "a", count: 10),
            Array(repeating: "b", count: 1_234),
        ]
        for arguments in cases {
            #expect(RedisCommandEncoder.encode(arguments) == self.hiredisFormatted(arguments), "\(arguments.prefix(3))")
        }
    }

    @Test func matchesHiredisOnGeneratedArguments() {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [Character] = ["a", "Z", "0", " ", "\r", "\n", "$", "*", "é", "中", "😀", "\0", "\u{7F}"]
        for _ in 0..<2_000 {
            let count = Int.random(in: 1...40, using: &generator)
            let arguments = (0..<count).map { _ in
                let length = Int.random(in: 0...(Bool.random(using: &generator) ? 12 : 300), using: &generator)
                return String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
            }
            let encoded = RedisCommandEncoder.encode(arguments)
            let reference = self.hiredisFormatted(arguments)
            #expect(encoded == reference)
            if encoded != reference { return }
        }
    }
}
