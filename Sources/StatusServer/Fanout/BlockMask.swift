import StatusCore

/// SPEC §10.5 on the delivery path: a block heard on the bus (``BusMessage/masked(appId:userId:viewer:publicVersion:)``),
/// applied to the viewer's local user in order with the target's changes. Pure: a marker in, what the node does out.
///
/// `block_side.lua` announces a block on the target's own channels in the step that freezes the target's public
/// version for the viewer: every change of the target published before it is not above the freeze, every one after it
/// comes after it. So once a node has applied it, it shows the viewer no more of the target's changes (a relationship
/// reload that read the viewer's keys before the block reached them does not undo it: the mask is pinned until its end
/// is heard, or a gap has every relationship read again), and it shows the viewer the mask at once, at the frozen
/// version: never below what the viewer was shown before, and nothing real of the target after it.
enum BlockMask {
    /// What the node does for one marker.
    struct Outcome: Equatable {
        /// The viewer's relationships changed here (cached recipients must be worked out again).
        var changed: Bool
        /// The mask to show the viewer's sessions that hear about the target: the target's frozen public version, or
        /// nil when nothing is shown (the mask ended, or this node had shown it already).
        var showAt: Int64?
    }

    /// Applies a marker about `target` (`frozen` nil: the mask ended) to the viewer's local user.
    static func apply(target: String, frozen: Int64?, to user: inout LocalUser) -> Outcome {
        guard let frozen else {
            let unpinned = user.pinnedMasks.remove(target) != nil
            let unblocked = user.blocked.remove(target) != nil
            return Outcome(changed: unpinned || unblocked, showAt: nil)
        }
        let pinned = user.pinnedMasks.insert(target).inserted
        let blocked = user.blocked.insert(target).inserted
        // A marker heard twice (on the user channel and on the app slot channel) shows the mask once.
        return Outcome(changed: pinned || blocked, showAt: pinned ? frozen : nil)
    }

    /// Whether a session of `user` with `scope` would hear about `target` (whose role is `role`) were there no block
    /// (SPEC §6): it is shown the mask. The role is the one the target held when the block began, read in the step
    /// that froze their version.
    static func hears(_ target: String, role: String?, user: LocalUser, scope: PresenceScope, config: AppConfig) -> Bool {
        let facts = Entitlement.Facts(
            userId: target,
            isSelf: false,
            subscribes: user.subscriptions.contains(target),
            isFriend: user.friends.contains(target),
            blocked: false
        )
        return Entitlement.hears(facts, role: role, scope: scope, config: config)
    }

    /// The mask `viewer` is shown of `target` at `frozen` (SPEC §10.5: offline, nothing else).
    static func shown(_ target: String, to viewer: String, frozen: Int64) -> UserStatus {
        let record = PresenceRecord(status: UserStatus(userId: target, statusType: .offline, version: frozen, onlineDevices: []))
        let view = PresenceView.of(target, seenBy: viewer, blocked: .none, isFriend: false, frozen: frozen)
        return view.status(of: record, appDefault: .everyone)
    }
}
