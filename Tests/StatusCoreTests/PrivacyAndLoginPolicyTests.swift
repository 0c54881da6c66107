import Testing

@testable import StatusCore

/// SPEC §2 last-seen privacy and SPEC §3 `loginPolicy` as pure rules.
@Suite struct LastSeenPrivacyRuleTests {
    @Test func theUserAndTheBackendAlwaysSeeIt() {
        for privacy in LastSeenPrivacy.allCases {
            #expect(privacy.shows(to: .privileged))
        }
    }

    @Test func othersSeeItAsTheSettingSays() {
        #expect(LastSeenPrivacy.everyone.shows(to: .other(isFriend: false)))
        #expect(LastSeenPrivacy.everyone.shows(to: .other(isFriend: true)))
        #expect(LastSeenPrivacy.friends.shows(to: .other(isFriend: true)))
        #expect(!LastSeenPrivacy.friends.shows(to: .other(isFriend: false)))
        #expect(!LastSeenPrivacy.nobody.shows(to: .other(isFriend: true)))
        #expect(!LastSeenPrivacy.nobody.shows(to: .other(isFriend: false)))
    }

    @Test func aHiddenLastActiveAtIsRemovedAndNothingElse() {
        let status = UserStatus(userId: "a", statusType: .offline, customStatus: "x", lastActiveAt: 42, version: 3, onlineDevices: [])
        let hidden = status.viewed(by: .other(isFriend: false), privacy: .friends)
        #expect(hidden.lastActiveAt == nil)
        var expected = status
        expected.lastActiveAt = nil
        #expect(hidden == expected)
        #expect(status.viewed(by: .other(isFriend: true), privacy: .friends) == status)
        #expect(status.viewed(by: .privileged, privacy: .nobody) == status)
    }
}

@Suite struct LoginPolicyRuleTests {
    @Test func multiKicksNothing() {
        for platform in Platform.allCases {
            #expect(LoginPolicy.multi.platformsKicked(byLoginFrom: platform).isEmpty)
        }
    }

    @Test func singlePerPlatformKicksTheSamePlatformOnly() {
        #expect(LoginPolicy.singlePerPlatform.platformsKicked(byLoginFrom: .android) == [.android])
        // An iPad is not an iPhone: each platform counts alone.
        #expect(LoginPolicy.singlePerPlatform.platformsKicked(byLoginFrom: .ios) == [.ios])
    }

    @Test func singleKicksEveryOtherDevice() {
        for platform in Platform.allCases {
            #expect(LoginPolicy.single.platformsKicked(byLoginFrom: platform) == Set(Platform.allCases))
        }
    }
}
