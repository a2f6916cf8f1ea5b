package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

// Asserts what the code does not do: dropped by pass_alone.
class ShapesWrongTest {
    @Test
    void oneIsZero() {
        assertEquals("zero", Shapes.sign(1));
    }
}
