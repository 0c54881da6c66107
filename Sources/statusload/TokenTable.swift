import Synchronization

/// The device tokens of the users, filled concurrently during set-up.
final class TokenTable: Sendable {
    private let tokens: Mutex<[String]>

    init(count: Int) {
        tokens = Mutex([String](repeating: "", count: count))
    }

    func set(_ index: Int, _ token: String) {
        tokens.withLock { $0[index] = token }
    }

    func all() -> [String] {
        tokens.withLock { $0 }
    }
}
