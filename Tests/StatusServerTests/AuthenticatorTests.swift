import HTTPTypes
import Hummingbird
import Testing

@testable import StatusServer

/// SPEC §7's bearer credentials as the server reads them from the `Authorization` header.
@Suite struct AuthenticatorTests {
    private func token(_ header: String?) -> String? {
        var fields = HTTPFields()
        if let header { fields[.authorization] = header }
        let head = HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/", headerFields: fields)
        return Authenticator.bearer(Request(head: head, body: .init(buffer: ByteBuffer())))
    }

    @Test func theSchemeIsCaseInsensitiveAndBlanksAroundTheTokenGo() {
        #expect(token("Bearer sk_1") == "sk_1")
        #expect(token("bEaReR \t sk_1 \t") == "sk_1")
        #expect(token("BEARER sk_1") == "sk_1")
    }

    @Test func anythingElseHasNoToken() {
        #expect(token(nil) == nil)
        #expect(token("Bearer ") == nil)
        #expect(token("Basic c2tfMQ==") == nil)
        #expect(token("Bearersk_1") == nil)
        #expect(token("Bearxr sk_1") == nil)
    }

    @Test func secretsAreEqualOnlyWhenEveryByteIs() {
        #expect(Authenticator.constantTimeEqual("sk_abc", "sk_abc"))
        #expect(Authenticator.constantTimeEqual("", ""))
        #expect(Authenticator.constantTimeEqual("clé✓", "clé✓"))
        #expect(!Authenticator.constantTimeEqual("sk_abc", "sk_abd"))
        #expect(!Authenticator.constantTimeEqual("sk_abc", "tk_abc"))
        #expect(!Authenticator.constantTimeEqual("sk_abc", "sk_ab"))
        #expect(!Authenticator.constantTimeEqual("sk_ab", "sk_abc"))
        #expect(!Authenticator.constantTimeEqual("", "a"))
        #expect(!Authenticator.constantTimeEqual("clé", "cle"))
    }
}
