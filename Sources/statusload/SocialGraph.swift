/// The loader's users and who hears about whom: each user subscribes to `subscriptionsPerUser` others chosen
/// deterministically from the seed, and (optionally) has friends on a ring (`friendsPerUser / 2` neighbours on each
/// side). The audience of a user is everyone who receives their changes besides their own devices.
struct SocialGraph: Sendable {
    let userCount: Int
    /// `subscriptions[u]`: the users `u` subscribes to, in subscription order.
    let subscriptions: [[Int32]]
    /// `friendsAdded[u]`: the friends `u` adds itself (the ring neighbours after it); friendships are mutual.
    let friendsAdded: [[Int32]]
    /// `audience[u]`: users (other than `u`) whose devices receive `u`'s changes: subscribers, plus friends when
    /// friend notification is on. No duplicates.
    let audience: [[Int32]]

    init(userCount: Int, subscriptionsPerUser: Int, friendsPerUser: Int, friendNotify: Bool, seed: UInt64) {
        self.userCount = userCount
        let perUser = min(subscriptionsPerUser, max(userCount - 1, 0))
        var subscriptions: [[Int32]] = []
        subscriptions.reserveCapacity(userCount)
        for user in 0..<userCount {
            var generator = SplitMix64(seed: seed &* 1_000_003 &+ UInt64(user))
            var chosen: [Int32] = []
            chosen.reserveCapacity(perUser)
            if perUser == userCount - 1 {
                chosen = (0..<userCount).filter { $0 != user }.map { Int32($0) }
            } else {
                var seen = Set<Int32>()
                while chosen.count < perUser {
                    let target = Int32(Int(generator.next() % UInt64(userCount)))
                    if Int(target) != user, seen.insert(target).inserted { chosen.append(target) }
                }
            }
            subscriptions.append(chosen)
        }
        let half = min(friendsPerUser / 2, max((userCount - 1) / 2, 0))
        let friendsAdded: [[Int32]] = (0..<userCount).map { user in
            half == 0 ? [] : (1...half).map { Int32((user + $0) % userCount) }
        }
        var audienceSets = [Set<Int32>](repeating: [], count: userCount)
        for (user, targets) in subscriptions.enumerated() {
            for target in targets { audienceSets[Int(target)].insert(Int32(user)) }
        }
        if friendNotify {
            for (user, friends) in friendsAdded.enumerated() {
                for friend in friends {
                    audienceSets[Int(friend)].insert(Int32(user))
                    audienceSets[user].insert(friend)
                }
            }
        }
        self.subscriptions = subscriptions
        self.friendsAdded = friendsAdded
        self.audience = audienceSets.map { Array($0).sorted() }
    }
}
