import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOPosix
import ServiceLifecycle

@testable import StatusServer

/// A response as a test reads it, from either way of running a node.
struct NodeTestResponse: Sendable {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    var body: ByteBuffer
}

/// How a test sends HTTP requests to the node under test: through its router (HummingbirdTesting's `.router`), or over
/// a socket to the node's own listener (``withLiveNode(_:_:)``). `port` is the listener's, nil through the router.
protocol NodeTestClient: Sendable {
    func send(uri: String, method: HTTPRequest.Method, headers: HTTPFields, body: ByteBuffer?) async throws -> NodeTestResponse
    var port: Int? { get }
}

extension NodeTestClient {
    /// Sends a request and hands its response to `callback` (as HummingbirdTesting's clients do).
    func execute<Value>(
        uri: String,
        method: HTTPRequest.Method,
        headers: HTTPFields = [:],
        body: ByteBuffer? = nil,
        _ callback: (NodeTestResponse) async throws -> Value
    ) async throws -> Value {
        try await callback(send(uri: uri, method: method, headers: headers, body: body))
    }
}

/// HummingbirdTesting's client (the router, no sockets).
struct RouterTestClient: NodeTestClient {
    let client: any TestClientProtocol

    func send(uri: String, method: HTTPRequest.Method, headers: HTTPFields, body: ByteBuffer?) async throws -> NodeTestResponse {
        try await client.execute(uri: uri, method: method, headers: headers, body: body) { response in
            NodeTestResponse(status: response.status, headers: response.headers, body: response.body)
        }
    }

    var port: Int? { client.port }
}

/// A keep-alive HTTP/1.1 connection to a node's own listener.
struct LiveTestClient: NodeTestClient {
    let client: TestClient
    let livePort: Int

    func send(uri: String, method: HTTPRequest.Method, headers: HTTPFields, body: ByteBuffer?) async throws -> NodeTestResponse {
        var headers = headers
        headers[.connection] = "keep-alive"
        let request = TestClient.Request(uri, method: method, authority: "localhost", headers: headers, body: body)
        let response = try await client.execute(request)
        return NodeTestResponse(status: response.status, headers: response.headers, body: response.body ?? ByteBuffer())
    }

    var port: Int? { livePort }
}

/// Starts `node` as the binary runs it (its services and its own listener, ``StatusNode/run()``) as a task of `tasks`;
/// returns its service group, to stop it, and its port, once it listens.
func start(_ node: StatusNode, in tasks: inout ThrowingTaskGroup<Void, any Error>) async throws -> (group: ServiceGroup, port: Int) {
    var node = node
    let (ports, listening) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(1))
    node.onListening = { channel in
        listening.yield(channel.localAddress?.port ?? 0)
        listening.finish()
    }
    let group = ServiceGroup(configuration: .init(services: [node], logger: node.logger))
    tasks.addTask {
        // A node that stops before it listens (its port taken) ends the wait for its port.
        defer { listening.finish() }
        try await group.run()
    }
    var iterator = ports.makeAsyncIterator()
    guard let port = await iterator.next() else { throw NodeDidNotListen() }
    return (group, port)
}

/// Runs `node` on a free port (``start(_:in:)``), hands `body` a client connected to it, then shuts the node down
/// gracefully, as HummingbirdTesting's `.live` does for an application run by Hummingbird's server.
func withLiveNode<Value>(_ node: StatusNode, _ body: @Sendable (LiveTestClient) async throws -> Value) async throws -> Value {
    try await withThrowingTaskGroup(of: Void.self) { tasks in
        let (group, port) = try await start(node, in: &tasks)
        let client = TestClient(host: "127.0.0.1", port: port, configuration: .init(timeout: .seconds(20)))
        client.connect()
        let result: Result<Value, any Error>
        do {
            result = .success(try await body(LiveTestClient(client: client, livePort: port)))
        } catch {
            result = .failure(error)
        }
        try await client.shutdown()
        await group.triggerGracefulShutdown()
        try await tasks.waitForAll()
        return try result.get()
    }
}

/// The node stopped before it listened.
struct NodeDidNotListen: Error {}
