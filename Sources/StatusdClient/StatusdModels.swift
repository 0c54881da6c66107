/// The API's JSON shapes, as generated from the OpenAPI document, under the names the SPEC uses. Response shapes
/// ignore members they do not know, so an answer from a newer server (a device `state`, say) still decodes; the closed
/// sets of values (platforms, availabilities, error codes…) are the open types of OpenValues.swift, so a value a newer
/// server adds decodes too.
public typealias UserStatus = Components.Schemas.UserStatus
public typealias OnlineDevice = Components.Schemas.OnlineDevice
public typealias UserFailure = Components.Schemas.UserFailure
public typealias StatusQueryResult = Components.Schemas.StatusQueryResult
public typealias SubscribeResult = Components.Schemas.SubscribeResult
public typealias UnsubscribeResult = Components.Schemas.UnsubscribeResult
public typealias SetStatusRequest = Components.Schemas.SetStatusRequest
public typealias UserIdBatch = Components.Schemas.UserIdBatch
public typealias OptionalUserIdList = Components.Schemas.OptionalUserIdList
public typealias AppConfig = Components.Schemas.AppConfig
public typealias AppConfigPatch = Components.Schemas.AppConfigPatch
public typealias AppView = Components.Schemas.AppView
public typealias CreatedApp = Components.Schemas.CreatedApp
public typealias AppStats = Components.Schemas.AppStats
public typealias UserProfile = Components.Schemas.UserProfile
public typealias UserProfileInput = Components.Schemas.UserProfileInput
public typealias MintedToken = Components.Schemas.MintedToken
public typealias UserPage = Components.Schemas.UserPage
public typealias ListedUser = Components.Schemas.ListedUser
public typealias BlockLists = Components.Schemas.BlockLists
/// `listUsers`' `status`: `online`, or `offline` for every user not online.
public typealias PresenceFilter = Operations.ListUsers.Input.Query.StatusPayload
/// `getBlocks`' `direction`: `byMe`, `me` or `both`.
public typealias BlockDirection = Operations.GetBlocks.Input.Query.DirectionPayload
