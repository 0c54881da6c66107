import StatusCore

/// A type a JSON request body decodes to, with the members its object may have: any other member, or one given twice,
/// is `INVALID_REQUEST` (SPEC §7), so that a misspelt field (`{"de8iceId": "d1"}` to a kick) is refused instead of
/// being taken as absent. A field added to a body type goes into its `members` too.
protocol JSONRequestBody: Decodable {
    /// The top-level members allowed, or nil when the route checks them itself.
    static var members: StrictJSON.Members? { get }
}

extension JSONValue: JSONRequestBody {
    /// A config PATCH names its fields itself: ``AppConfigPatch`` refuses unknown ones, nested ones included.
    static var members: StrictJSON.Members? { nil }
}

extension UserIdList: JSONRequestBody {
    static let members: StrictJSON.Members? = StrictJSON.Members(["userIds"])
}
