/// What a setSelfStatus does to the custom status: SPEC §4, a field left out keeps its value; `null` or `""` clears it.
enum CustomStatusChange: Sendable, Equatable {
    /// The request did not name `customStatus`.
    case keep
    /// The request set it to this value (nil when it was `null`).
    case set(String?)
}
