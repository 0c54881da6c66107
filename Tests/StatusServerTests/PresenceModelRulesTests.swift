import Testing

/// ``PresenceModel`` on its own: the rules it holds the service to, without a server.
@Suite struct PresenceModelRulesTests {
    private typealias Model = PresenceModel

    private func model(_ options: Model.Options = Model.Options()) -> Model {
        Model(users: ["alice", "bob", "mallory"], options: options)
    }

    @Test func aDropWithinTheGraceShowsNothingUntilTimePasses() {
        var model = model()
        model.apply(.connect("alice", device: "d0"))
        model.apply(.setCustomStatus("alice", "lunch", expiring: false))
        let online = model.world.view(of: "alice", by: "bob")
        model.apply(.drop("alice", device: "d0"))
        #expect(model.world.view(of: "alice", by: "bob") == online)
        model.apply(.connect("alice", device: "d1"))
        #expect(model.world.view(of: "alice", by: "bob") == online, "back within the grace: no change")
        model.apply(.drop("alice", device: "d1"))
        model.passTime()
        let offline = model.world.view(of: "alice", by: "bob")
        #expect(offline.statusType == .offline && offline.customStatus == nil && offline.version == online.version + 1)
    }

    @Test func aKickDuringTheGraceEndsItAtOnce() {
        var model = model()
        model.apply(.connect("alice", device: "d0"))
        model.apply(.drop("alice", device: "d0"))
        model.apply(.kick("alice", device: nil))
        #expect(model.world.view(of: "alice", by: "bob").statusType == .unlogined)
        #expect(!model.world.hasPending)
    }

    @Test func twoSetsAtOnceLeaveEitherLastAndAnObservationTellsWhich() {
        var model = model()
        model.apply(.connect("alice", device: "d0"))
        model.applyConcurrently([.setCustomStatus("alice", "short", expiring: true), .setCustomStatus("alice", "long", expiring: false)])
        #expect(Set(model.worlds.map { $0.view(of: "alice", by: nil).customStatus }) == ["short", "long"])
        #expect(model.keep { $0.view(of: "alice", by: nil).customStatus == "short" })
        #expect(model.worlds.count == 1 && model.world.hasPending)
        #expect(!model.keep { $0.view(of: "alice", by: nil).customStatus == "neither" }, "no order gives it")
        #expect(model.worlds.count == 1, "a refuted observation keeps what was known")
    }

    @Test func aGraceAndAnExpiryDueTogetherEndInEitherOrder() {
        var model = model()
        model.apply(.connect("alice", device: "d0"))
        model.apply(.setCustomStatus("alice", "soon", expiring: true))
        let before = model.world.view(of: "alice", by: nil).version
        model.apply(.drop("alice", device: "d0"))
        model.passTime()
        // The expiry first, then the grace (two changes), or the grace first (which clears the status with it: one).
        #expect(Set(model.worlds.map { $0.view(of: "alice", by: nil).version }) == [before + 1, before + 2])
        #expect(model.worlds.allSatisfy { $0.view(of: "alice", by: nil).statusType == .offline && !$0.hasPending })
    }

    @Test func aBlockFreezesTheMaskAndNoViewGoesBackwards() {
        var model = model()
        model.apply(.connect("alice", device: "d0"))
        model.apply(.setCustomStatus("alice", "one", expiring: false))
        let seen = model.world.view(of: "alice", by: "mallory")
        model.apply(.block("mallory", "alice"))
        model.apply(.setCustomStatus("alice", "two", expiring: false))
        model.apply(.setAvailability("alice", "busy"))
        let masked = model.world.view(of: "alice", by: "mallory")
        #expect(masked == Model.View(statusType: .offline, version: seen.version, expires: false, masked: true))
        #expect(model.world.view(of: "mallory", by: "alice").masked, "either side of a block")
        #expect(!model.world.hears("mallory", "alice", scope: .all))
        #expect(model.world.snapshot(for: "mallory", scope: .all)["alice"] == masked)
        model.apply(.unblock("mallory", "alice"))
        let after = model.world.view(of: "alice", by: "mallory")
        #expect(after.version >= masked.version && after.customStatus == "two")
    }

    @Test func invisibilityShowsAnOfflineUserWhateverTheyDo() {
        var model = model()
        model.apply(.connect("alice", device: "d0"))
        model.apply(.setCustomStatus("alice", "here", expiring: false))
        let visible = model.world.view(of: "alice", by: "bob")
        model.apply(.setAvailability("alice", "invisible"))
        let hidden = model.world.view(of: "alice", by: "bob")
        #expect(hidden == Model.View(statusType: .offline, version: visible.version + 1, expires: false))
        model.apply(.setCustomStatus("alice", "secret", expiring: true))
        model.apply(.drop("alice", device: "d0"))
        model.passTime()
        model.apply(.connect("alice", device: "d0"))
        #expect(model.world.view(of: "alice", by: "bob") == hidden, "nothing an invisible user does is seen")
        #expect(model.world.snapshot(for: "bob", scope: .all)["alice"] == nil, "not online as others see her")
        model.apply(.setAvailability("alice", "available"))
        #expect(model.world.view(of: "alice", by: "bob").version == hidden.version + 1)
    }

    @Test func withTheSpecsGraceGoingInvisibleLooksLikeADrop() {
        var model = model(Model.Options(graced: true, invisibleGrace: true))
        model.apply(.connect("alice", device: "d0"))
        let online = model.world.view(of: "alice", by: "bob")
        model.apply(.setAvailability("alice", "invisible"))
        #expect(model.world.view(of: "alice", by: "bob") == online, "seen online until the grace passes")
        model.apply(.setAvailability("alice", "available"))
        #expect(model.world.view(of: "alice", by: "bob") == online, "back within the grace: nothing seen")
        model.apply(.setAvailability("alice", "invisible"))
        model.passTime()
        #expect(model.world.view(of: "alice", by: "bob") == Model.View(statusType: .offline, version: online.version + 1, expires: false))
    }

    /// Without relations, and from the deleted user's versions: the kick (online v1 → unlogined v2), then nothing more,
    /// the new user's view being the kicked one's.
    @Test func aDeletedUserComesBackAsANewOneWithoutRelations() {
        var model = model()
        model.apply(.subscribe("bob", "alice"))
        model.apply(.block("alice", "mallory"))
        model.apply(.connect("alice", device: "d0"))
        model.apply(.delete("alice"))
        #expect(model.world.view(of: "alice", by: "bob") == Model.View(statusType: .unlogined, version: 2, expires: false))
        #expect(model.world.subscriptions.isEmpty && model.world.blocks.isEmpty && model.world.blockVersions.isEmpty)
    }

    /// A deletion moves each version whose view it changes: alice, unlogined and away, comes back available. Her own
    /// view changed (v1 → v2); what others saw did not (no availability is shown while not online), nor its version.
    @Test func aDeletionMovesTheVersionsOfTheViewsItChanges() {
        var model = model()
        model.apply(.setAvailability("alice", "away"))
        let own = model.world.view(of: "alice", by: nil)
        let seen = model.world.view(of: "alice", by: "bob")
        model.apply(.delete("alice"))
        let fresh = model.world.view(of: "alice", by: nil)
        #expect(fresh.version == own.version + 1 && fresh.availability == "available")
        #expect(model.world.view(of: "alice", by: "bob") == seen)
    }
}
