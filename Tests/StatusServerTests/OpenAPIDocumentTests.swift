import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// The OpenAPI document served at `/openapi.json` (SPEC §9) against the router it describes.
@Suite(.redis) struct OpenAPIDocumentTests {
    private static let methods = ["get", "put", "post", "delete", "patch", "head", "options"]

    /// The document as shipped in the package.
    private func document() throws -> JSONValue {
        let buffer = try WebRoutes.load("openapi.json")
        return try JSONDecoder().decode(JSONValue.self, from: Data(buffer.readableBytesView))
    }

    /// `METHOD /path/{param}` for every route of a node's router (the hot routes' tests read it too).
    static func registeredRoutes() throws -> Set<String> {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "openapi-test"))
        let configuration = ServerConfiguration(host: "127.0.0.1", port: 0, redis: try TestRedis.configuration, adminKey: "admin")
        let wiring = try NodeWiring(configuration: configuration, redis: redis, logger: Logger(label: "openapi-test"))
        let router = try buildRouter(wiring: wiring, index: FanoutIndex(), activity: AppActivity(metrics: wiring.metrics))
        return Set(router.routes.map { "\($0.method.rawValue) \($0.path.description)" })
    }

    /// `METHOD /path/{param}` for every operation of the document.
    private func documentedRoutes(_ document: JSONValue) -> Set<String> {
        guard case .object(let paths) = document["paths"] else { return [] }
        var routes = Set<String>()
        for (path, item) in paths {
            guard case .object(let operations) = item else { continue }
            for method in operations.keys where Self.methods.contains(method) {
                routes.insert("\(method.uppercased()) \(path)")
            }
        }
        return routes
    }

    @Test func everyRouteOfTheRouterIsDocumentedAndEveryDocumentedRouteExists() throws {
        let registered = try Self.registeredRoutes()
        let documented = documentedRoutes(try document())
        #expect(registered.count > 30)
        #expect(registered.subtracting(documented).sorted() == [], "routes missing from openapi.json")
        #expect(documented.subtracting(registered).sorted() == [], "documented routes the router does not have")
    }

    @Test func theDocumentIsOpenAPI31WithResolvableReferencesAndSecurityOnEveryNonPublicOperation() throws {
        let document = try document()
        #expect(document["openapi"].string == "3.1.0")
        #expect(document["components"]["securitySchemes"]["adminKey"]["scheme"].string == "bearer")
        #expect(document["components"]["securitySchemes"]["appKey"]["scheme"].string == "bearer")
        var references: [String] = []
        func collect(_ value: JSONValue) {
            switch value {
            case .object(let fields):
                if case .string(let reference) = fields["$ref"] { references.append(reference) }
                fields.values.forEach(collect)
            case .array(let items):
                items.forEach(collect)
            default:
                break
            }
        }
        collect(document)
        #expect(!references.isEmpty)
        for reference in Set(references) {
            let target = reference.dropFirst(2).split(separator: "/").reduce(document) { $0[String($1)] }
            #expect(reference.hasPrefix("#/") && !target.isNull, "unresolved \(reference)")
        }
        guard case .object(let paths) = document["paths"] else {
            Issue.record("no paths")
            return
        }
        for (path, item) in paths {
            guard case .object(let operations) = item else { continue }
            for (method, operation) in operations where Self.methods.contains(method) {
                #expect(operation["operationId"].string != nil, "\(method) \(path) has no operationId")
                let scheme: String? =
                    if path.hasPrefix("/v1/apps/{appId}/") && !path.hasSuffix("/config") && !path.hasSuffix("/stats") {
                        "appKey"
                    } else if path.hasPrefix("/v1/apps") { "adminKey" } else { nil }
                if let scheme {
                    #expect(operation["security"][0][scheme] == [], "\(method) \(path) should need \(scheme)")
                    #expect(operation["responses"]["401"] != .null, "\(method) \(path) documents no 401")
                }
            }
        }
        // SPEC §5: a 429 always carries Retry-After.
        #expect(document["components"]["headers"]["RetryAfter"]["required"].bool == true)
        #expect(document["components"]["responses"]["RateLimited"]["headers"]["Retry-After"] != .null)
    }

    @Test func theSchemasFollowTheCodeOfErrorsAndConfig() throws {
        let document = try document()
        let schemas = document["components"]["schemas"]
        // Every error code statusd can answer with is listed.
        let codes: [StatusError.Code] = [
            .invalidRequest, .invalidUserId, .customStatusTooLong, .tooManyUsers, .invalidLimit, .unauthorized, .forbidden,
            .planNotSupported, .featureDisabled, .userNotFound, .appNotFound, .appExists, .requestTimeout, .payloadTooLarge, .rateLimited,
            .unavailable, .cannotSubscribeSelf, .notFound, .methodNotAllowed, .internalError,
        ]
        #expect(Set(schemas["ErrorCode"]["enum"].strings) == Set(codes.map(\.rawValue)))
        // The config schema names exactly the fields a config is encoded with, all required in a reply.
        let encoded = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(AppConfig()))
        guard case .object(let fields) = encoded, case .object(let properties) = schemas["AppConfig"]["properties"] else {
            Issue.record("config schema missing")
            return
        }
        #expect(Set(fields.keys) == Set(properties.keys))
        #expect(Set(schemas["AppConfig"]["required"].strings) == Set(fields.keys))
        guard case .object(let patchable) = schemas["AppConfigPatch"]["properties"] else {
            Issue.record("patch schema missing")
            return
        }
        #expect(Set(patchable.keys) == Set(fields.keys))
        // Every flag the schema allows in a patch is accepted by statusd with its current value.
        for (key, value) in fields {
            #expect(throws: Never.self, "\(key)") { try AppConfigPatch.apply(.object([key: value]), to: AppConfig()) }
        }
    }

    /// A request body's schema lists exactly the members its type accepts (any other is refused, SPEC §7), and says so.
    @Test func theRequestBodySchemasNameTheMembersTheCodeAccepts() throws {
        let schemas = try document()["components"]["schemas"]
        let bodies: [String: StrictJSON.Members?] = [
            "SetStatusRequest": StatusRoutes.SetStatus.members, "KickRequest": StatusRoutes.Kick.members,
            "UserIdBatch": UserIdList.members, "QueryUserIdBatch": UserIdList.members, "RelationBatch": UserIdList.members,
            "OptionalUserIdList": StatusRoutes.OptionalUserIds.members, "CreateAppRequest": AdminRoutes.CreateApp.members,
            "TokenRequest": UserRoutes.TokenRequest.members, "BackendQueryRequest": StatusRoutes.BackendQuery.members,
            "UserProfileInput": UserProfileInput.members, "LoginRequest": StatusRoutes.Login.members,
        ]
        for (name, members) in bodies {
            guard case .object(let properties) = schemas[name]["properties"] else {
                Issue.record("\(name) has no properties")
                continue
            }
            #expect(Set(properties.keys) == Set(members?.names ?? []), "\(name)")
            #expect(schemas[name]["additionalProperties"] == false, "\(name)")
        }
    }

    /// The status object's schema names every member a status can carry (SPEC §2, §10.1, §10.2), and the availability
    /// schema every value of ``Availability``.
    @Test func theStatusSchemaNamesEveryMemberTheCodeWrites() throws {
        let schemas = try document()["components"]["schemas"]
        let full = UserStatus(
            userId: "a",
            statusType: .online,
            customStatus: "c",
            lastActiveAt: 1,
            version: 2,
            onlineDevices: [OnlineDevice(deviceId: "d", platform: .web)],
            availability: .busy,
            customStatusExpiresAt: 3
        )
        guard case .object(let written) = try JSONDecoder().decode(JSONValue.self, from: Data(full.jsonBytes)),
            case .object(let properties) = schemas["UserStatus"]["properties"]
        else {
            Issue.record("no UserStatus properties")
            return
        }
        #expect(Set(properties.keys) == Set(written.keys))
        #expect(schemas["Availability"]["enum"].strings == Availability.allCases.map(\.rawValue))
    }

    /// Every operation documents the answers of the request hygiene, whatever its route.
    @Test func everyOperationDocumentsTheTimeoutAndTheSizeLimit() throws {
        guard case .object(let paths) = try document()["paths"] else {
            Issue.record("no paths")
            return
        }
        for (path, operations) in paths {
            guard case .object(let byMethod) = operations else { continue }
            for (method, operation) in byMethod where method != "parameters" {
                #expect(operation["responses"]["408"]["$ref"] == "#/components/responses/RequestTimeout", "\(method) \(path)")
                #expect(operation["responses"]["413"]["$ref"] == "#/components/responses/PayloadTooLarge", "\(method) \(path)")
            }
        }
    }

    @Test func theDocumentTheClientAndTheConsoleAreServed() async throws {
        try await withStatusd { api in
            try await api.client.execute(uri: "/openapi.json", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)
                let served = try JSONDecoder().decode(JSONValue.self, from: Data(buffer: response.body))
                #expect(served == (try document()))
            }
            try await api.client.execute(uri: "/client/statusd.js", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("text/javascript") == true)
                #expect(String(buffer: response.body).contains("export class StatusClient"))
                // Pages of the apps' own origins import it: a cross-origin module script needs CORS.
                #expect(response.headers[.accessControlAllowOrigin] == "*")
            }
            try await api.client.execute(uri: "/console", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("text/html") == true)
                let policy = response.headers[.contentSecurityPolicy] ?? ""
                #expect(policy.contains("frame-ancestors 'none'") && policy.contains("default-src 'none'"))
                // No external assets: nothing is loaded from another host.
                let page = String(buffer: response.body)
                #expect(!page.contains("http://") && !page.contains("https://"))
            }
        }
    }
}
