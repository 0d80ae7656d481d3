package io.rdmastore.store;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;

/**
 * The members of a set value: a dense array for O(1) random picks (SRANDMEMBER, SPOP) and a hash index for O(1)
 * membership, add and remove (a removed member's slot takes the last member). Not thread-safe: guarded by its
 * key's shard lock.
 */
final class MemberSet {
    private final ArrayList<Key> items = new ArrayList<>();
    private final HashMap<Key, Integer> index = new HashMap<>();

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
        if (index.putIfAbsent(k, items.size()) != null) {
            return false;
        }
        items.add(k);
        return true;
    }

    boolean remove(Key k) {
        Integer at = index.remove(k);
        if (at == null) {
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
