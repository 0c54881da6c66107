import Foundation
import Synchronization

/// The requests of one device waiting for their replies, by id. A slot is made before the request is sent, so a reply
/// that arrives before its requester waits is kept; a connection that closes fails every slot at once.
final class PendingReplies: Sendable {
    private enum Slot {
        case expecting
        case arrived(Data)
        case failed(any Error)
        case waiting(CheckedContinuation<Data, any Error>)
    }

    private let slots = Mutex<[String: Slot]>([:])

    func expect(_ id: String) {
        slots.withLock { $0[id] = .expecting }
    }

    /// Waits for the reply to `id`; cancelling the waiting task (its timeout) removes the slot.
    func reply(to id: String) async throws -> Data {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, any Error>) in
                let ready: Result<Data, any Error>? = slots.withLock { slots in
                    switch slots[id] {
                    case .arrived(let data):
                        slots[id] = nil
                        return .success(data)
                    case .failed(let error):
                        slots[id] = nil
                        return .failure(error)
                    case .expecting:
                        slots[id] = .waiting(continuation)
                        return nil
                    case .waiting, nil:
                        return .failure(CancellationError())
                    }
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            fail(id, CancellationError())
        }
    }

    /// Hands a reply frame to its requester; false when no request waits for that id (a late reply after a timeout).
    @discardableResult
    func deliver(_ id: String, _ frame: Data) -> Bool {
        let continuation: CheckedContinuation<Data, any Error>? = slots.withLock { slots in
            switch slots[id] {
            case .expecting:
                slots[id] = .arrived(frame)
                return nil
            case .waiting(let continuation):
                slots[id] = nil
                return continuation
            default:
                return nil
            }
        }
        continuation?.resume(returning: frame)
        return continuation != nil
    }

    /// Fails one request (its timeout or cancellation).
    func fail(_ id: String, _ error: any Error) {
        let continuation: CheckedContinuation<Data, any Error>? = slots.withLock { slots in
            switch slots[id] {
            case .expecting:
                slots[id] = .failed(error)
                return nil
            case .waiting(let continuation):
                slots[id] = nil
                return continuation
            default:
                slots[id] = nil
                return nil
            }
        }
        continuation?.resume(throwing: error)
    }

    /// Drops the slot of a request that was never sent.
    func forget(_ id: String) {
        _ = slots.withLock { $0.removeValue(forKey: id) }
    }

    /// Fails every request: the connection they were sent on is gone.
    func failAll(_ error: any Error) {
        let waiting: [CheckedContinuation<Data, any Error>] = slots.withLock { slots in
            var waiting: [CheckedContinuation<Data, any Error>] = []
            for (id, slot) in slots {
                switch slot {
                case .waiting(let continuation):
                    waiting.append(continuation)
                    slots[id] = nil
                case .expecting:
                    slots[id] = .failed(error)
                default:
                    break
                }
            }
            return waiting
        }
        for continuation in waiting { continuation.resume(throwing: error) }
    }
}
