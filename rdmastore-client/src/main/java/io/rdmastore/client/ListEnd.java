package io.rdmastore.client;

/** An end of a list, for LMOVE: {@code LEFT} is the head (index 0), {@code RIGHT} the tail. */
public enum ListEnd {
    LEFT,
    RIGHT
}
