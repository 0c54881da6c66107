import Testing

@testable import StatusServer

/// Comma-separated header tokens, as the WebSocket upgrade reads `Connection` and `Upgrade`.
@Suite struct HeaderTokensTests {
    @Test func aTokenIsFoundInAnyValueAnyCaseAndAnySpacing() {
        #expect(HeaderTokens.contains(["Upgrade"], token: "upgrade"))
        #expect(HeaderTokens.contains(["keep-alive, Upgrade"], token: "upgrade"))
        #expect(HeaderTokens.contains(["keep-alive", " \tUPGRADE\t "], token: "upgrade"))
        #expect(HeaderTokens.contains(["websocket,h2c"], token: "WebSocket"))
    }

    @Test func onlyAWholeTokenCounts() {
        #expect(!HeaderTokens.contains([], token: "upgrade"))
        #expect(!HeaderTokens.contains([""], token: "upgrade"))
        #expect(!HeaderTokens.contains([" , ,"], token: "upgrade"))
        #expect(!HeaderTokens.contains(["upgrades"], token: "upgrade"))
        #expect(!HeaderTokens.contains(["up grade"], token: "upgrade"))
        #expect(!HeaderTokens.contains(["keep-alive"], token: "upgrade"))
        #expect(!HeaderTokens.contains(["websocket2"], token: "websocket"))
    }
}
