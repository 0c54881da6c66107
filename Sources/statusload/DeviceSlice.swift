/// `--device-slice K/N`: this process runs the devices `d` with `d mod N = K`, so N processes (each below the open-file
/// limit) can hold the devices of one app together.
struct DeviceSlice: Sendable, Equatable {
    var index: Int
    var count: Int

    init(index: Int, count: Int) {
        self.index = index
        self.count = count
    }

    /// Parses `K/N`; nil (no option) is the whole set, `0/1`; nil when malformed.
    init?(_ text: String?) {
        guard let text else {
            self.init(index: 0, count: 1)
            return
        }
        let parts = text.split(separator: "/")
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]), count >= 1, index >= 0, index < count else { return nil }
        self.init(index: index, count: count)
    }
}
