# loss: written by sparserl; run `gnuplot loss.gp` to redraw.
set terminal pngcairo noenhanced size 900,520 font 'sans,10'
set output '/work/main/docs/examples/quickstart-h100/plots/loss.png'
set title 'loss'
set xlabel 'step'
set ylabel 'loss'
set grid
set key outside right top
set datafile missing 'NaN'
plot '/work/main/docs/examples/quickstart-h100/plots/loss.dat' index 0 using 1:2 with linespoints pt 7 ps 0.6 lw 2 lc rgb '#0072B2' title 'pretrain', \
     '/work/main/docs/examples/quickstart-h100/plots/loss.dat' index 1 using 1:2 with linespoints pt 7 ps 0.6 lw 2 lc rgb '#D55E00' title 'rl', \
     '/work/main/docs/examples/quickstart-h100/plots/loss.dat' index 2 using 1:2 with linespoints pt 7 ps 0.6 lw 2 lc rgb '#009E73' title 'sft'
