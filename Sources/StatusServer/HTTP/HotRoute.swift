import HTTPTypes

/// The two server-API operations app backends call most, recognised from the method and the path alone, before the
/// router (``StatusResponder``): setSelfStatus (`PUT /v1/apps/{appId}/users/{userId}/status`) and getUserStatus
/// (`POST /v1/apps/{appId}/users/{userId}/status/query`).
///
/// A path is recognised only when the router would resolve it to the same route: the fixed segments exactly as
/// registered and the two ids non-empty. Anything else (an empty segment, a trailing slash, another spelling, another
/// method) is left to the router, which answers it as it always has, so recognising a path here never changes what it
/// means.
struct HotRoute: Equatable, Sendable {
    enum Operation: Equatable, Sendable {
        case setSelfStatus
        case getUserStatus
    }

    let operation: Operation
    /// The ids' path segments as sent: percent-decoding and validation are the handler's, as for the router's
    /// parameters.
    let appIdSegment: Substring
    let userIdSegment: Substring

    /// The route's path as the router registers it: what the router would name the endpoint (the `http.route` label of
    /// the request metrics).
    var routePath: String {
        switch operation {
        case .setSelfStatus: Self.setSelfStatusPath
        case .getUserStatus: Self.getUserStatusPath
        }
    }

    static let setSelfStatusPath = "/v1/apps/{appId}/users/{userId}/status"
    static let getUserStatusPath = "/v1/apps/{appId}/users/{userId}/status/query"

    /// The hot route of a request, or nil for the router. `path` is the request's path without its query, as the
    /// router reads it (`request.uri.path`).
    static func match(method: HTTPRequest.Method, path: String) -> HotRoute? {
        let operation: Operation
        switch method {
        case .put: operation = .setSelfStatus
        case .post: operation = .getUserStatus
        default: return nil
        }
        let utf8 = path.utf8
        guard var index = skip("/v1/apps/", in: utf8, from: utf8.startIndex) else { return nil }
        guard let appEnd = segmentEnd(in: utf8, from: index) else { return nil }
        let appId = path[index..<appEnd]
        guard let usersEnd = skip("/users/", in: utf8, from: appEnd) else { return nil }
        index = usersEnd
        guard let userEnd = segmentEnd(in: utf8, from: index) else { return nil }
        let userId = path[index..<userEnd]
        let rest = path[userEnd...]
        switch operation {
        case .setSelfStatus: guard rest == "/status" else { return nil }
        case .getUserStatus: guard rest == "/status/query" else { return nil }
        }
        return HotRoute(operation: operation, appIdSegment: appId, userIdSegment: userId)
    }

    /// The index after `literal` when `utf8` has it at `index`.
    private static func skip(_ literal: StaticString, in utf8: String.UTF8View, from index: String.Index) -> String.Index? {
        var index = index
        for byte in UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount) {
            guard index < utf8.endIndex, utf8[index] == byte else { return nil }
            index = utf8.index(after: index)
        }
        return index
    }

    /// The end of a non-empty segment starting at `index` (the next `/`), or nil when the segment is empty or the
    /// path ends in it.
    private static func segmentEnd(in utf8: String.UTF8View, from index: String.Index) -> String.Index? {
        guard let end = utf8[index...].firstIndex(of: UInt8(ascii: "/")), end > index else { return nil }
        return end
    }
}
