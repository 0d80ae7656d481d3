package io.rdmastore.store;

import org.agrona.collections.Hashing;
import org.agrona.collections.Object2IntHashMap;

import java.util.ArrayList;
import java.util.List;

/**
 * The members of a set value: a dense array for O(1) random picks (SRANDMEMBER, SPOP) and a hash index for O(1)
 * membership, add and remove (a removed member's slot takes the last member). The index is Agrona's open-addressing
 * {@link Object2IntHashMap}: no entry object and no boxed slot number per member (a {@code HashMap<Key, Integer>} cost
 * about 50 bytes per member more; bin/type-memory set). Not thread-safe: guarded by its key's shard lock.
 */
final class MemberSet {
    private static final int MISSING = -1;
    private final ArrayList<Key> items = new ArrayList<>();
    private final Object2IntHashMap<Key> index = new Object2IntHashMap<>(8, Hashing.DEFAULT_LOAD_FACTOR, MISSING);

    int size() {
        return items.size();
    }

    boolean isEmpty() {
        return items.isEmpty();
    }

    boolean contains(Key k) {
        return index.containsKey(k);
    }

    boolean add(Key k) {
        if (index.putIfAbsent(k, items.size()) != MISSING) {
            return false;
        }
        items.add(k);
        return true;
    }

    boolean remove(Key k) {
        int at = index.removeKey(k);
        if (at == MISSING) {
            return false;
        }
        Key last = items.removeLast();
        if (at < items.size()) {
            items.set(at, last);
            index.put(last, at);
        }
        return true;
    }

    /** The member in slot {@code i} (0 to size-1); slots change as members are removed. */
    Key get(int i) {
        return items.get(i);
    }

    /** The members in slot order; a view the caller must not keep past the lock. */
    List<Key> members() {
        return items;
    }
}
