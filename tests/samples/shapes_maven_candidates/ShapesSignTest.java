package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class ShapesSignTest {
    @Test
    void zeroIsZero() {
        assertEquals("zero", Shapes.sign(0));
    }

    @Test
    void threeIsPositive() {
        assertEquals("positive", Shapes.sign(3));
    }
}
