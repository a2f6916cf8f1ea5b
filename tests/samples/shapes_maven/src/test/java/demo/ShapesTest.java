package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class ShapesTest {
    @Test
    void signOfANegativeNumber() {
        assertEquals("negative", Shapes.sign(-2));
    }

    @Test
    void areaOfASquare() {
        assertEquals(4.0, Shapes.area(2, 2));
    }
}
