import Testing

@testable import StatusCore

/// SPEC §10.5 (with §2 last-seen privacy and §10.1 availability): the status of a user as each class of viewer sees it,
/// over every combination of statusType, availability, privacy, friendship and viewer class.
@Suite struct PresenceViewTests {
    static let devices = [OnlineDevice(deviceId: "phone", platform: .ios)]

    static func record(
        _ type: StatusType,
        _ availability: Availability,
        privacy: LastSeenPrivacy? = nil,
        idle: Bool = false,
        hidden: PresenceRecord.Hidden? = PresenceRecord.Hidden(statusType: .offline, lastActiveAt: 500)
    ) -> PresenceRecord {
        PresenceRecord(
            status: UserStatus(
                userId: "alice",
                statusType: type,
                customStatus: type == .online ? "in a meeting" : nil,
                lastActiveAt: 900,
                version: 12,
                onlineDevices: type == .online ? devices : [],
                customStatusExpiresAt: type == .online ? 5_000 : nil
            ),
            availability: availability,
            publicVersion: 7,
            hidden: availability == .invisible ? hidden : nil,
            lastSeenPrivacy: privacy,
            allDevicesIdle: idle
        )
    }

    static let viewers: [PresenceView] = [.own, .others(isFriend: false), .others(isFriend: true), .blocked(publicVersionAtBlock: 3)]

    @Test(arguments: [StatusType.online, .offline, .unlogined], Availability.allCases)
    func theOwnViewIsEverythingAsItIs(type: StatusType, availability: Availability) {
        for privacy in [nil] + LastSeenPrivacy.allCases.map(Optional.some) {
            let record = Self.record(type, availability, privacy: privacy)
            let own = PresenceView.own.status(of: record, appDefault: .nobody)
            var expected = record.status
            expected.availability = availability
            #expect(own == expected)
            #expect(own.version == 12)
        }
    }

    @Test(arguments: [StatusType.online, .offline, .unlogined], Availability.allCases)
    func theBlockedViewIsTheOfflineMaskWithTheVersionOfTheBlock(type: StatusType, availability: Availability) {
        let record = Self.record(type, availability, privacy: .everyone)
        let masked = PresenceView.blocked(publicVersionAtBlock: 3).status(of: record, appDefault: .everyone)
        #expect(masked == UserStatus(userId: "alice", statusType: .offline, version: 3, onlineDevices: []))
        // A block stored without its version shows the current public one.
        #expect(PresenceView.blocked(publicVersionAtBlock: nil).status(of: record, appDefault: .everyone).version == 7)
    }

    @Test(arguments: [StatusType.online, .offline, .unlogined], [Availability.available, .away, .busy, .dnd])
    func othersSeeAVisibleUserWithThePublicVersion(type: StatusType, availability: Availability) {
        for isFriend in [false, true] {
            let seen = PresenceView.others(isFriend: isFriend).status(of: Self.record(type, availability), appDefault: .everyone)
            var expected = Self.record(type, availability).status
            expected.version = 7
            // Availability only while they see the user online (SPEC §10.1).
            expected.availability = type == .online ? availability : nil
            #expect(seen == expected)
        }
    }

    @Test(arguments: [StatusType.online, .offline, .unlogined], [StatusType.offline, .unlogined])
    func othersSeeAnInvisibleUserAsTheyWereWhenTheyStoppedBeingSeen(type: StatusType, hiddenAs: StatusType) {
        for isFriend in [false, true] {
            let record = Self.record(type, .invisible, hidden: PresenceRecord.Hidden(statusType: hiddenAs, lastActiveAt: 500))
            let seen = PresenceView.others(isFriend: isFriend).status(of: record, appDefault: .everyone)
            #expect(seen == UserStatus(userId: "alice", statusType: hiddenAs, lastActiveAt: 500, version: 7, onlineDevices: []))
            #expect(seen.customStatus == nil && seen.availability == nil && seen.customStatusExpiresAt == nil)
        }
    }

    /// What an invisible user really does never shows: the public view is the same whatever their real state.
    @Test func nothingAnInvisibleUserDoesChangesThePublicView() {
        let views = [StatusType.online, .offline, .unlogined].map { type in
            PresenceView.others(isFriend: false).status(of: Self.record(type, .invisible), appDefault: .everyone)
        }
        #expect(Set(views).count == 1)
    }

    @Test(arguments: Self.viewers)
    func lastSeenPrivacyDecidesWhoElseSeesLastActiveAt(viewer: PresenceView) {
        for availability in [Availability.available, .invisible] {
            for (own, appDefault) in [
                (LastSeenPrivacy?.none, LastSeenPrivacy.everyone), (nil, .friends), (nil, .nobody), (.everyone, .nobody), (.friends, .everyone),
                (.nobody, .everyone),
            ] {
                let record = Self.record(.offline, availability, privacy: own)
                let seen = viewer.status(of: record, appDefault: appDefault)
                let effective = own ?? appDefault
                let expected: Bool
                switch viewer {
                case .own: expected = true
                case .others(let isFriend): expected = effective.shows(to: .other(isFriend: isFriend))
                case .blocked: expected = false
                }
                #expect((seen.lastActiveAt != nil) == expected, "\(viewer) \(availability) \(String(describing: own)) \(appDefault)")
            }
        }
    }

    @Test func automaticAwayShowsAwayOnlyForAvailableAndOnline() {
        #expect(PresenceView.own.status(of: Self.record(.online, .available, idle: true), appDefault: .everyone).availability == .away)
        #expect(
            PresenceView.others(isFriend: false).status(of: Self.record(.online, .available, idle: true), appDefault: .everyone).availability == .away
        )
        #expect(PresenceView.own.status(of: Self.record(.online, .available), appDefault: .everyone).availability == .available)
        for chosen in [Availability.busy, .dnd, .away, .invisible] {
            #expect(PresenceView.own.status(of: Self.record(.online, chosen, idle: true), appDefault: .everyone).availability == chosen)
        }
        #expect(PresenceView.own.status(of: Self.record(.offline, .available, idle: true), appDefault: .everyone).availability == .available)
    }

    @Test func theBackendQueryWithoutDetailKeepsNoDeviceListInAnyView() {
        var record = Self.record(.online, .invisible)
        record.status.onlineDevices = nil
        for viewer in Self.viewers {
            #expect(viewer.status(of: record, appDefault: .everyone).onlineDevices == nil)
        }
    }

    @Test func dataWithoutAPublicVersionStartsFromTheVersion() {
        let record = PresenceRecord(status: UserStatus(userId: "a", statusType: .online, version: 9))
        #expect(PresenceView.others(isFriend: false).status(of: record, appDefault: .everyone).version == 9)
        #expect(record.availability == .available)
    }

    @Test func availabilityValuesAreExactlyTheFive() throws {
        #expect(Availability.allCases.map(\.rawValue) == ["available", "away", "busy", "dnd", "invisible"])
        #expect(try Availability.parse("dnd") == .dnd)
        #expect(throws: StatusError.self) { try Availability.parse("Busy") }
        #expect(throws: StatusError.self) { try Availability.parse("offline") }
    }
}

extension PresenceViewTests {
    /// SPEC §10.5 with an offline grace: until it ends, an invisible user is seen as they were seen online when they
    /// became invisible (no device, `lastActiveAt` that moment), whatever they did since.
    @Test func duringTheGraceOfBecomingInvisibleOthersSeeTheUserAsTheyWere() {
        let seen = PresenceRecord.Hidden(
            statusType: .online,
            lastActiveAt: 800,
            customStatus: "lunch",
            availability: .busy,
            customStatusExpiresAt: 4_000
        )
        for type in [StatusType.online, .offline, .unlogined] {
            let status = PresenceView.others(isFriend: false).status(of: Self.record(type, .invisible, hidden: seen), appDefault: .everyone)
            #expect(
                status
                    == UserStatus(
                        userId: "alice",
                        statusType: .online,
                        customStatus: "lunch",
                        lastActiveAt: 800,
                        version: 7,
                        onlineDevices: [],
                        availability: .busy,
                        customStatusExpiresAt: 4_000
                    )
            )
        }
        // Only a user seen online carries a custom status or an availability.
        let offline = PresenceRecord.Hidden(statusType: .offline, lastActiveAt: 800, customStatus: "lunch", availability: .busy)
        #expect(offline.customStatus == nil && offline.availability == nil)
    }
}
