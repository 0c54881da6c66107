import AsyncHTTPClient
import Foundation
import NIOCore
import StatusCore

/// POSTs one signed event to a receiver (SPEC §8) and says whether it was accepted (2xx within the timeout).
struct WebhookSender: Sendable {
    let client: HTTPClient
    let timeout: Duration

    /// The most of a receiver's answer body that is read (and thrown away).
    static let maxResponseBytes = 64 * 1024

    /// What came of one attempt.
    enum Outcome: Sendable, Hashable {
        /// The receiver answered 2xx.
        case delivered(status: Int)
        /// A non-2xx answer, a timeout or a connection error.
        case failed(reason: String)
    }

    /// The HTTP client the dispatcher uses: 2 s to connect and between reads, no redirects (a 3xx is a failure), and as
    /// many connections per receiver host as the dispatcher has slots, so that a request never waits in the client's
    /// pool behind another app's hung one on the same host.
    static func makeClient(timeout: Duration, connectionsPerHost: Int) -> HTTPClient {
        let amount = TimeAmount.milliseconds(timeout.inMilliseconds)
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: amount, read: amount))
        configuration.connectionPool.idleTimeout = .seconds(30)
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connectionsPerHost
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    /// POSTs `body` to `webhook`, signed at `now`.
    func post(_ body: String, to webhook: AppConfig.Webhook, now: Date) async -> Outcome {
        var request = HTTPClientRequest(url: webhook.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "statusd-webhook")
        let signature = WebhookSigner.signature(body: body, secret: webhook.secret, timestamp: Int64(now.timeIntervalSince1970))
        request.headers.add(name: WebhookSigner.headerName, value: signature)
        request.body = .bytes(ByteBuffer(string: body))
        do {
            let response = try await client.execute(request, timeout: .milliseconds(timeout.inMilliseconds))
            let status = Int(response.status.code)
            // The answer's body means nothing to statusd; reading it lets the connection be reused.
            _ = try? await response.body.collect(upTo: Self.maxResponseBytes)
            return (200..<300).contains(status) ? .delivered(status: status) : .failed(reason: "HTTP \(status)")
        } catch {
            return .failed(reason: "\(error)")
        }
    }
}
