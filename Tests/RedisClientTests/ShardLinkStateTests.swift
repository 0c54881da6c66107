import Testing

@testable import RedisClient

/// The pure bookkeeping of one sharded pub/sub connection: commands per slot, confirmations matched to the oldest
/// command, refusals and unasked `sunsubscribe`s turned into moves, and the gap reported after a resubscription.
@Suite struct ShardLinkStateTests {
    private func push(_ kind: String, _ channel: String, _ count: Int64 = 1) -> RedisValue {
        .array([.bulkString(Array(kind.utf8)), .bulkString(Array(channel.utf8)), .integer(count)])
    }

    @Test func channelsWaitForTheConnectionAndAreSentOneCommandPerSlot() {
        var state = ShardLinkState()
        #expect(state.add(["a:{x}", "b:{x}", "c:{y}"]).isEmpty)
        let commands = state.connectionEstablished()
        #expect(commands.count == 2)
        #expect(Set(commands.map { Set($0.channels) }) == [["a:{x}", "b:{x}"], ["c:{y}"]])
        #expect(commands.allSatisfy { $0.arguments.first == "SSUBSCRIBE" })
        // Once connected, new channels go out at once; known ones are not sent again.
        #expect(state.add(["d:{z}", "a:{x}"]) == [.init(subscribe: true, channels: ["d:{z}"])])
    }

    @Test func confirmationsAreReportedAndTheFirstConnectIsNoGap() {
        var state = ShardLinkState()
        _ = state.add(["a", "b"])
        _ = state.connectionEstablished()
        #expect(state.receive(push("ssubscribe", "a")) == [.confirmed(["a"])])
        #expect(state.receive(push("ssubscribe", "b", 2)) == [.confirmed(["b"])])
        #expect(state.confirmed == ["a", "b"])
        #expect(
            state.receive(.array([.bulkString(Array("smessage".utf8)), .bulkString(Array("a".utf8)), .bulkString([1, 2])])) == [
                .message(channel: "a", payload: [1, 2])
            ]
        )
        #expect(state.receive(.array([.bulkString(Array("pong".utf8)), .bulkString([])])) == [.pong])
        #expect(state.receive(.simpleString("PONG")) == [.pong])
    }

    @Test func aReconnectResubscribesEverythingAndReportsOneGap() {
        var state = ShardLinkState()
        _ = state.add(["a", "b"])
        _ = state.connectionEstablished()
        _ = state.receive(push("ssubscribe", "a"))
        _ = state.receive(push("ssubscribe", "b"))
        state.connectionLost()
        #expect(state.confirmed.isEmpty)
        #expect(state.add(["c"]).isEmpty)
        let commands = state.connectionEstablished()
        #expect(Set(commands.flatMap(\.channels)) == ["a", "b", "c"])
        var actions: [ShardLinkState.Action] = []
        for channel in commands.flatMap(\.channels) {
            actions += state.receive(push("ssubscribe", channel))
        }
        #expect(actions.filter { $0 == .resubscribed }.count == 1)
        #expect(actions.last == .resubscribed)
    }

    @Test func unsubscribingIsNotAMoveButAnUnaskedSunsubscribeIs() {
        var state = ShardLinkState()
        _ = state.add(["a", "b"])
        _ = state.connectionEstablished()
        _ = state.receive(push("ssubscribe", "a"))
        _ = state.receive(push("ssubscribe", "b"))
        #expect(state.remove(["a", "unknown"]) == [.init(subscribe: false, channels: ["a"])])
        #expect(state.receive(push("sunsubscribe", "a", 1)).isEmpty)
        #expect(state.wanted == ["b"])
        // The slot of "b" moved to another master: Redis unsubscribed it on its own.
        #expect(state.receive(push("sunsubscribe", "b", 0)) == [.moved(["b"])])
        #expect(state.wanted.isEmpty)
    }

    @Test func aRefusedCommandMovesItsChannelsOnly() {
        var state = ShardLinkState()
        _ = state.connectionEstablished()
        _ = state.add(["a:{x}"])
        _ = state.add(["b:{y}"])
        #expect(state.receive(.error("MOVED 1234 127.0.0.1:7001")) == [.moved(["a:{x}"])])
        #expect(state.receive(push("ssubscribe", "b:{y}")) == [.confirmed(["b:{y}"])])
        #expect(state.wanted == ["b:{y}"])
    }

    @Test func channelsMovedHereReportAGapOnceConfirmed() {
        var state = ShardLinkState()
        _ = state.add(["a"])
        _ = state.connectionEstablished()
        _ = state.receive(push("ssubscribe", "a"))
        let commands = state.add(["m1", "m2"], afterMove: true)
        #expect(Set(commands.flatMap(\.channels)) == ["m1", "m2"])
        #expect(state.receive(push("ssubscribe", "m1")) == [.confirmed(["m1"])])
        #expect(state.receive(push("ssubscribe", "m2")) == [.confirmed(["m2"]), .resubscribed])
    }

    @Test func bigSlotsAreSplitIntoCommandsOf512() {
        let channels = (0..<1200).map { "c\($0):{same}" }
        let commands = ShardLinkState.commands(subscribe: true, channels)
        #expect(commands.map(\.channels.count) == [512, 512, 176])
    }
}
