import Hummingbird
import Logging
import RedisClient
import StatusCore

/// Turns every error of a routed request into the SPEC §7 error body (``ErrorAnswers``).
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let answers: ErrorAnswers

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            return answers.response(to: error, appIdSegment: context.parameters.get("appId"), path: request.uri.path, logger: context.logger)
        }
    }
}

/// The answer to a request that failed: client mistakes are 4xx, Redis outages 503 `UNAVAILABLE`, and anything
/// unexpected a logged 500. Shared by the router's ``ErrorMiddleware`` and the hot routes (``HotRoutes``), so a
/// failure is answered and counted alike whichever way the request came.
struct ErrorAnswers: Sendable {
    /// Where `RATE_LIMITED` answers are counted per app (the app of the path), for the admin API's stats.
    var activity: AppActivity?
    /// Counts `RATE_LIMITED` and `UNAVAILABLE` answers node-wide.
    let metrics: NodeMetrics

    /// The error response to `error`, counted; `appIdSegment` is the app of the path as sent, if it names one.
    func response(to error: any Error, appIdSegment: String?, path: String, logger: Logger) -> Response {
        let mapped = Self.statusError(for: error)
        switch mapped.code {
        case .rateLimited:
            metrics.rateLimited.increment()
            if let appId = appIdSegment.flatMap(PercentDecoding.decode) { activity?.recordRateLimited(appId: appId) }
        case .unavailable: metrics.redisErrors.increment()
        default: break
        }
        if mapped.code == .internalError {
            logger.error("request failed", metadata: ["error": "\(error)", "path": "\(path)"])
        }
        return mapped.response()
    }

    /// Maps any error to a ``StatusError``.
    static func statusError(for error: any Error) -> StatusError {
        switch error {
        case let error as StatusError:
            return error
        case let error as RedisClientError where error.isConnectionProblem:
            return StatusError(.unavailable, "storage unavailable, try again")
        case let error as any HTTPResponseError:
            let message = (error as? HTTPError)?.body
            switch error.status.code {
            case 404: return StatusError(.notFound, "no such route")
            case 405: return StatusError(.methodNotAllowed, "method not allowed")
            case 413: return StatusError(.payloadTooLarge, "request body is larger than 1 MiB")
            case 401: return StatusError(.unauthorized, message ?? "unauthorized")
            case 400..<500: return StatusError(.invalidRequest, message ?? "invalid request")
            default: return StatusError(.internalError, "internal error")
            }
        case is DecodingError:
            return StatusError(.invalidRequest, "malformed JSON or wrong field types")
        default:
            return StatusError(.internalError, "internal error")
        }
    }
}
